import { useEffect, useRef } from "react";

import { validateStage } from "../api/hooks";
import { alignErrorPath } from "../graph/spec";
import { useBuilder } from "./store";

const VALIDATE_DELAY_MS = 400;

/**
 * Validation as you go: each stage whose config changed is checked by the server
 * (POST plugins/{kind}/{type}/validate) once typing pauses, whether or not its panel is
 * still open; only the answer for a stage's latest config is kept.
 */
export function useStageValidation(): void {
  const nodes = useBuilder((s) => s.nodes);
  const setStageErrors = useBuilder((s) => s.setStageErrors);
  const checked = useRef(new Map<string, string>());

  useEffect(() => {
    const timer = window.setTimeout(() => {
      for (const node of nodes) {
        const { kind, type, config } = node.data;
        const key = JSON.stringify([kind, type, config]);
        if (checked.current.get(node.id) === key) continue;
        checked.current.set(node.id, key);
        validateStage(kind, type, config)
          .then((answer) => {
            if (checked.current.get(node.id) !== key) return; // a newer config is on its way
            const fields: Record<string, string[]> = {};
            const errors = "errors" in answer ? answer.errors : {};
            for (const [path, messages] of Object.entries(errors)) {
              fields[alignErrorPath(path.replace(/^config\.?/, ""), config)] = messages;
            }
            setStageErrors(node.id, fields);
          })
          .catch(() => checked.current.delete(node.id));
      }
    }, VALIDATE_DELAY_MS);
    return () => window.clearTimeout(timer);
  }, [nodes, setStageErrors]);
}
