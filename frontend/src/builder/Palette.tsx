import { useMemo, useState } from "react";

import { usePlugins } from "../api/hooks";
import type { Plugin } from "../api/types";
import { DRAG_TYPE, KIND_TITLES, KINDS, searchPlugins } from "./plugins";

/** Sources, transforms and sinks from the catalogue: drag one onto the canvas, or press it. */
export function Palette({ onAdd }: { onAdd: (plugin: Plugin) => void }) {
  const plugins = usePlugins();
  const [query, setQuery] = useState("");
  const found = useMemo(() => searchPlugins(plugins.data ?? [], query), [plugins.data, query]);
  return (
    <aside className="palette" aria-label="Stages">
      <label className="field">
        <span>Search stages</span>
        <input
          type="search"
          value={query}
          placeholder="kafka, filter, mask…"
          onChange={(event) => setQuery(event.target.value)}
        />
      </label>
      <h2 className="visually-hidden">Stages</h2>
      {plugins.isError && <p className="error">Could not load the plugin catalogue.</p>}
      {KINDS.map((kind) => {
        const items = found.filter((p) => p.kind === kind);
        return (
          <section key={kind} aria-label={KIND_TITLES[kind]}>
            <h3>{KIND_TITLES[kind]}</h3>
            {items.length === 0 && <p className="muted small">None match.</p>}
            <ul>
              {items.map((plugin) => (
                <li key={`${plugin.kind}/${plugin.type}`}>
                  <button
                    type="button"
                    className={`palette-item kind-${plugin.kind}`}
                    draggable
                    data-testid={`palette-${plugin.kind}-${plugin.type}`}
                    title={`${plugin.description}\nDrag onto the canvas, or press to add.`}
                    onDragStart={(event) => {
                      event.dataTransfer.setData(
                        DRAG_TYPE,
                        JSON.stringify({ kind: plugin.kind, type: plugin.type }),
                      );
                      event.dataTransfer.effectAllowed = "move";
                    }}
                    onClick={() => onAdd(plugin)}
                  >
                    <strong>{plugin.title}</strong>
                    <span className="small muted">{plugin.description}</span>
                  </button>
                </li>
              ))}
            </ul>
          </section>
        );
      })}
    </aside>
  );
}
