/** A tiny hash router: #/, #/channels/<name>, #/build, #/build/<name>, #/workers,
 * #/schemas, #/schemas/<subject>, #/schemas/<team>/<subject>, #/audit. */

import { useSyncExternalStore } from "react";

export type Route =
  | { page: "channels" }
  | { page: "channel"; name: string }
  | { page: "build"; name: string | null }
  | { page: "workers" }
  | { page: "schemas"; subject: string | null; team?: string | null }
  | { page: "audit" };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const [first, second, third] = parts;
  if (first === "channels" && second) return { page: "channel", name: second };
  if (first === "build") return { page: "build", name: second ?? null };
  if (first === "workers") return { page: "workers" };
  if (first === "schemas" && third) return { page: "schemas", subject: third, team: second };
  if (first === "schemas") return { page: "schemas", subject: second ?? null };
  if (first === "audit") return { page: "audit" };
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
      if (route.subject && route.team)
        return `#/schemas/${encodeURIComponent(route.team)}/${encodeURIComponent(route.subject)}`;
      return route.subject ? `#/schemas/${encodeURIComponent(route.subject)}` : "#/schemas";
    case "audit":
      return "#/audit";
    default:
      return "#/";
  }
}

export function navigate(route: Route): void {
  window.location.hash = href(route);
}

/** What asks before the app leaves a page with unsaved work: a message (ask) or null (go). */
type LeaveGuard = () => string | null;

let leaveGuard: LeaveGuard | null = null;
let acceptedHash = typeof window === "undefined" ? "" : window.location.hash;

/** Ask ``guard`` before any in-app navigation (a link, navigate(), Back) until the returned
 * function is called; a reload or a closed tab is the page's beforeunload's business. */
export function setLeaveGuard(guard: LeaveGuard): () => void {
  leaveGuard = guard;
  return () => {
    if (leaveGuard === guard) leaveGuard = null;
  };
}

/** Whether the app may leave now: no guard, nothing to lose, or the user said yes. */
export function mayLeave(confirm: (message: string) => boolean = (m) => window.confirm(m)): boolean {
  const message = leaveGuard?.() ?? null;
  return message === null || confirm(message);
}

// Runs before React's listener (this module loads first): a refused change of page puts the
// address back before React reads it, so the page never re-renders.
if (typeof window !== "undefined") {
  window.addEventListener("hashchange", () => {
    const hash = window.location.hash;
    if (hash === acceptedHash) return;
    if (samePage(hash, acceptedHash)) {
      acceptedHash = hash;
      return;
    }
    if (mayLeave()) acceptedHash = hash;
    else window.history.replaceState(window.history.state, "", acceptedHash || "#/");
  });
}

function samePage(a: string, b: string): boolean {
  return href(parseRoute(a)) === href(parseRoute(b));
}

function subscribe(callback: () => void) {
  window.addEventListener("hashchange", callback);
  return () => window.removeEventListener("hashchange", callback);
}

export function useRoute(): Route {
  const hash = useSyncExternalStore(subscribe, () => window.location.hash);
  return parseRoute(hash);
}
