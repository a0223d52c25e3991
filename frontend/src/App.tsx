import { lazy, Suspense } from "react";

import { csrfToken } from "./api/client";
import { href, useRoute } from "./router";

import { ChannelsPage } from "./ops/ChannelsPage";

// Each page is its own chunk, loaded when first visited: the builder's form library and the
// canvas stay out of the first download. The channels list, the landing page, is in the main
// chunk: a lazy page shows the fallback first, and React holds the page back for 300 ms after
// a fallback (its anti-flicker throttle), longer than the list's chunk takes to arrive.
const BuilderPage = lazy(() => import("./builder/BuilderPage").then((m) => ({ default: m.BuilderPage })));
const ChannelPage = lazy(() => import("./ops/ChannelPage").then((m) => ({ default: m.ChannelPage })));
const SchemasPage = lazy(() => import("./schemas/SchemasPage").then((m) => ({ default: m.SchemasPage })));
const AuditPage = lazy(() => import("./audit/AuditPage").then((m) => ({ default: m.AuditPage })));
const WorkersPage = lazy(() => import("./ops/WorkersPage").then((m) => ({ default: m.WorkersPage })));

export function App() {
  const route = useRoute();
  const user = document.body.dataset.user ?? "";
  return (
    <div className="app">
      <header className="topbar">
        <a className="brand" href={href({ page: "channels" })}>
          Sluice
        </a>
        <nav aria-label="Main">
          <a
            href={href({ page: "channels" })}
            aria-current={route.page === "channels" || route.page === "channel" ? "page" : undefined}
          >
            Channels
          </a>
          <a href={href({ page: "build", name: null })} aria-current={route.page === "build" ? "page" : undefined}>
            Builder
          </a>
          <a href={href({ page: "workers" })} aria-current={route.page === "workers" ? "page" : undefined}>
            Workers
          </a>
          <a
            href={href({ page: "schemas", subject: null })}
            aria-current={route.page === "schemas" ? "page" : undefined}
          >
            Schemas
          </a>
          <a href={href({ page: "audit" })} aria-current={route.page === "audit" ? "page" : undefined}>
            Audit
          </a>
          <a href="/admin/">Admin</a>
          <a href="/api/docs/">API docs</a>
        </nav>
        <form className="logout" method="post" action="/logout/">
          <input type="hidden" name="csrfmiddlewaretoken" value={csrfToken()} />
          {user && <span className="muted">{user}</span>}
          <button type="submit" className="link">
            Log out
          </button>
        </form>
      </header>
      <main className="page">
        <Suspense fallback={<p className="muted page-loading">Loading…</p>}>
          {route.page === "channels" && <ChannelsPage />}
          {route.page === "channel" && <ChannelPage name={route.name} />}
          {route.page === "build" && <BuilderPage name={route.name} />}
          {route.page === "workers" && <WorkersPage />}
          {route.page === "schemas" && <SchemasPage subject={route.subject} team={route.team ?? null} />}
          {route.page === "audit" && <AuditPage />}
        </Suspense>
      </main>
    </div>
  );
}
