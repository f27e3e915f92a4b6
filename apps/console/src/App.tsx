// The console's frame: sign-in, then the navigation and the page the URL's hash names.
import type { TidingsAdmin } from "@tidings/sdk";
import { useState } from "react";
import { BroadcastsPage } from "./pages/Broadcasts.tsx";
import { DeliveriesPage } from "./pages/Deliveries.tsx";
import { JourneyPage } from "./pages/Journey.tsx";
import { JourneysPage } from "./pages/Journeys.tsx";
import { SegmentPage, SegmentsPage } from "./pages/Segments.tsx";
import { TemplatesPage } from "./pages/Templates.tsx";
import { UserPage } from "./pages/User.tsx";
import { SignIn } from "./pages/SignIn.tsx";
import { useRoute } from "./route.ts";
import { adminClient, forgetKey, storedKey } from "./session.ts";

export function App() {
  const [admin, setAdmin] = useState<TidingsAdmin | null>(() => {
    const key = storedKey();
    return key ? adminClient(key) : null;
  });
  const route = useRoute();
  if (!admin) return <SignIn onSignedIn={setAdmin} />;
  const signOut = () => {
    forgetKey();
    setAdmin(null);
  };
  return (
    <div className="frame">
      <header>
        <strong className="brand">Tidings</strong>
        <nav aria-label="Sections">
          <a href="#/journeys" aria-current={route.page.startsWith("journey") ? "page" : undefined}>
            Journeys
          </a>
          <a href="#/segments" aria-current={route.page.startsWith("segment") ? "page" : undefined}>
            Segments
          </a>
          <a href="#/broadcasts" aria-current={route.page === "broadcasts" ? "page" : undefined}>
            Broadcasts
          </a>
          <a href="#/deliveries" aria-current={route.page === "deliveries" ? "page" : undefined}>
            Deliveries
          </a>
          <a href="#/templates" aria-current={route.page === "templates" ? "page" : undefined}>
            Templates
          </a>
        </nav>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>
        {route.page === "journeys" && <JourneysPage admin={admin} />}
        {route.page === "journey" && <JourneyPage admin={admin} id={route.id} />}
        {route.page === "segments" && <SegmentsPage admin={admin} />}
        {route.page === "segment" && <SegmentPage admin={admin} id={route.id} />}
        {route.page === "broadcasts" && <BroadcastsPage admin={admin} />}
        {route.page === "deliveries" && <DeliveriesPage admin={admin} />}
        {route.page === "user" && <UserPage admin={admin} userId={route.id} />}
        {route.page === "templates" && <TemplatesPage admin={admin} />}
      </main>
    </div>
  );
}
