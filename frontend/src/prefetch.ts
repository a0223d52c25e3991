/** The landing page's data asked for as soon as the app's code runs, while the page's own
 * code still loads: the first page of channels arrives with it instead of after it. */

import type { QueryClient } from "@tanstack/react-query";

import { DEFAULT_PARAMS, pageQuery } from "./ops/fleet";
import { parseRoute } from "./router";

/** Start reading what the page at `hash` shows first (the channels list's first page);
 * returns whether anything was asked for. */
export function prefetchLanding(client: QueryClient, hash: string): boolean {
  if (parseRoute(hash).page !== "channels") return false;
  void client.prefetchQuery(pageQuery(DEFAULT_PARAMS));
  return true;
}
