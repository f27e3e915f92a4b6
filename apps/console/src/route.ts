// Routing by the URL's hash (#/journeys/ID): the server serves one page at /console.
import { useEffect, useState } from "react";

export type Route =
  | { page: "journeys" }
  | { page: "journey"; id: string }
  | { page: "segments" }
  | { page: "segment"; id: string }
  | { page: "broadcasts" }
  | { page: "deliveries" }
  | { page: "user"; id: string }
  | { page: "templates" };

export function parseRoute(hash: string): Route {
  const [page, id] = hash.replace(/^#\/?/, "").split("/");
  if (page === "journeys" && id) return { page: "journey", id: decodeURIComponent(id) };
  if (page === "segments") return id ? { page: "segment", id: decodeURIComponent(id) } : { page: "segments" };
  if (page === "broadcasts") return { page: "broadcasts" };
  if (page === "deliveries") return { page: "deliveries" };
  if (page === "templates") return { page: "templates" };
  if (page === "users" && id) return { page: "user", id: decodeURIComponent(id) };
  return { page: "journeys" };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}
