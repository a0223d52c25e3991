/** The runtime workers' actions: drain, back in service (undrain), forget a dead one. */

import { useMutation, useQueryClient } from "@tanstack/react-query";

import { api, post } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];
export type DrainResult = Schemas["Drain"];
export type WorkerAction = "drain" | "undrain" | "forget";

/** The workers list's path for a service filter (`?service=`, none for every worker). */
export function workersPath(service: string): string {
  return service ? `workers/?service=${encodeURIComponent(service)}` : "workers/";
}

export function useWorkerAction() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ workerId, action }: { workerId: string; action: WorkerAction }) => {
      const path = `workers/${encodeURIComponent(workerId)}/`;
      if (action === "forget") return api<null>(path, { method: "DELETE" });
      return post<DrainResult | Schemas["Worker"]>(`${path.slice(0, -1)}/${action}`);
    },
    onSettled: () => {
      void client.invalidateQueries({ queryKey: ["workers"] });
      void client.invalidateQueries({ queryKey: ["cluster"] });
    },
  });
}
