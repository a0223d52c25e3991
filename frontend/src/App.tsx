import { BuilderPage } from "./builder/BuilderPage";
import { csrfToken } from "./api/client";
import { ChannelPage } from "./ops/ChannelPage";
import { ChannelsPage } from "./ops/ChannelsPage";
import { WorkersPage } from "./ops/WorkersPage";
import { href, useRoute } from "./router";

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
          <a href={href({ page: "channels" })} aria-current={route.page === "channels" || route.page === "channel" ? "page" : undefined}>
            Channels
          </a>
          <a href={href({ page: "build", name: null })} aria-current={route.page === "build" ? "page" : undefined}>
            Builder
          </a>
          <a href={href({ page: "workers" })} aria-current={route.page === "workers" ? "page" : undefined}>
            Workers
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
        {route.page === "channels" && <ChannelsPage />}
        {route.page === "channel" && <ChannelPage name={route.name} />}
        {route.page === "build" && <BuilderPage name={route.name} />}
        {route.page === "workers" && <WorkersPage />}
      </main>
    </div>
  );
}
