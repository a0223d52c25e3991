/** A tiny hash router: #/, #/channels/<name>, #/build, #/build/<name>, #/workers. */

import { useSyncExternalStore } from "react";

export type Route =
  | { page: "channels" }
  | { page: "channel"; name: string }
  | { page: "build"; name: string | null }
  | { page: "workers" };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const [first, second] = parts;
  if (first === "channels" && second) return { page: "channel", name: second };
  if (first === "build") return { page: "build", name: second ?? null };
  if (first === "workers") return { page: "workers" };
  return { page: "channels" };
}

export function href(route: Route): string {
  switch (route.page) {
    case "channel":
      return `#/channels/${encodeURIComponent(route.name)}`;
    case "build":
      return route.name ? `#/build/${encodeURIComponent(route.name)}` : "#/build";
    case "workers":
      return "#/workers";
    default:
      return "#/";
  }
}

export function navigate(route: Route): void {
  window.location.hash = href(route);
}

function subscribe(callback: () => void) {
  window.addEventListener("hashchange", callback);
  return () => window.removeEventListener("hashchange", callback);
}

export function useRoute(): Route {
  const hash = useSyncExternalStore(subscribe, () => window.location.hash);
  return parseRoute(hash);
}
