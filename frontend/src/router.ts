/** A tiny hash router: #/, #/channels/<name>, #/build, #/build/<name>, #/workers,
 * #/schemas, #/schemas/<subject>. */

import { useSyncExternalStore } from "react";

export type Route =
  | { page: "channels" }
  | { page: "channel"; name: string }
  | { page: "build"; name: string | null }
  | { page: "workers" }
  | { page: "schemas"; subject: string | null };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const [first, second] = parts;
  if (first === "channels" && second) return { page: "channel", name: second };
  if (first === "build") return { page: "build", name: second ?? null };
  if (first === "workers") return { page: "workers" };
  if (first === "schemas") return { page: "schemas", subject: second ?? null };
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
    case "schemas":
      return route.subject ? `#/schemas/${encodeURIComponent(route.subject)}` : "#/schemas";
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
