/**
 * Hash routing (`#/calls/{id}`): the server serves one index.html, and a
 * reload or a shared link lands on the same page.
 */
import { useEffect, useState } from "react";

export function currentRoute(): string[] {
  const hash = window.location.hash.replace(/^#\/?/, "");
  return hash
    .split("/")
    .filter((p) => p !== "")
    .map(decodeURIComponent);
}

export function useRoute(): string[] {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const onChange = () => setRoute(currentRoute());
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}

/** The href of a route: `href("calls", id)` is `#/calls/{id}`. */
export function href(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join("/")}`;
}

export function navigate(...parts: string[]): void {
  window.location.hash = href(...parts).slice(1);
}
