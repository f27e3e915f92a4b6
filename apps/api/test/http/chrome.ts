// The Chromium the browser tests drive (Debian package `chromium`, or CHROME_PATH).
import { accessSync, constants } from "node:fs";
import path from "node:path";
import puppeteer from "puppeteer-core";

/** CHROME_PATH when set (a wrong path then fails the launch), else the first browser on PATH. */
export function findChrome(): string | undefined {
  if (process.env.CHROME_PATH) return process.env.CHROME_PATH;
  for (const name of ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]) {
    for (const dir of (process.env.PATH ?? "").split(path.delimiter).filter(Boolean)) {
      try {
        accessSync(path.join(dir, name), constants.X_OK);
        return path.join(dir, name);
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** A headless Chromium as the tests run it (no sandbox: tests run as root). */
export const launchChrome = (executablePath: string) =>
  puppeteer.launch({ executablePath, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
