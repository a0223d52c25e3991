import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

import "@xyflow/react/dist/style.css";
import "./styles.css";
import { App } from "./App";
import { prefetchLanding } from "./prefetch";

const client = new QueryClient({
  defaultOptions: {
    // Keep the last answer on screen while refetching: no flicker, no layout jumps.
    queries: { retry: 1, refetchOnWindowFocus: false, placeholderData: (previous: unknown) => previous },
  },
});

prefetchLanding(client, window.location.hash);

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={client}>
      <App />
    </QueryClientProvider>
  </StrictMode>,
);
