import { useEffect, useRef } from "react";

import { validateStage } from "../api/hooks";
import { ruleName, ruleNameProblems } from "../graph/rules";
import { alignErrorPath } from "../graph/spec";
import { useBuilder } from "./store";

const VALIDATE_DELAY_MS = 400;

/**
 * Validation as you go: each stage whose config changed is checked by the server
 * (POST plugins/{kind}/{type}/validate) once typing pauses, whether or not its panel is
 * still open; only the answer for a stage's latest config is kept. A rule's name is checked
 * here (its form, its uniqueness), its pattern by the server as a filter's would be.
 */
export function useStageValidation(): void {
  const nodes = useBuilder((s) => s.nodes);
  const setStageErrors = useBuilder((s) => s.setStageErrors);
  const team = useBuilder((s) => s.team); // checked within its reach (empty: the site's)
  const checked = useRef(new Map<string, string>());

  useEffect(() => {
    const timer = window.setTimeout(() => {
      const rules = nodes.filter((n) => n.data.kind === "rule");
      for (const node of nodes) {
        const { kind, type, config } = node.data;
        const others = kind === "rule" ? rules.filter((r) => r.id !== node.id).map((r) => ruleName(r.data.config)) : [];
        const key = JSON.stringify([kind, type, config, others, team]);
        if (checked.current.get(node.id) === key) continue;
        checked.current.set(node.id, key);
        const local: Record<string, string[]> = {};
        if (kind === "rule") {
          const problems = ruleNameProblems(ruleName(config), others);
          if (problems.length > 0) local.name = problems;
          if (config.pattern === undefined) {
            setStageErrors(node.id, local);
            continue;
          }
        }
        const [checkKind, checkType, checkConfig] =
          kind === "rule" ? ["transform", "filter", { pattern: config.pattern }] : [kind, type, config];
        validateStage(checkKind, checkType, checkConfig, team)
          .then((answer) => {
            if (checked.current.get(node.id) !== key) return; // a newer config is on its way
            const fields: Record<string, string[]> = { ...local };
            const errors = "errors" in answer ? answer.errors : {};
            for (const [path, messages] of Object.entries(errors)) {
              fields[alignErrorPath(path.replace(/^config\.?/, ""), checkConfig)] = messages;
            }
            setStageErrors(node.id, fields);
          })
          .catch(() => checked.current.delete(node.id));
      }
    }, VALIDATE_DELAY_MS);
    return () => window.clearTimeout(timer);
  }, [nodes, setStageErrors, team]);
}
