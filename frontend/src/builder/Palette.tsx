import { useMemo, useState } from "react";

import { usePlugins } from "../api/hooks";
import type { NodeKind } from "../graph/spec";
import { DRAG_TYPE, KIND_TITLES, KINDS, RULE_ITEM, searchPlugins } from "./plugins";

export interface PaletteItem {
  kind: NodeKind;
  type: string;
  title: string;
  description: string;
}

/**
 * Sources, transforms and sinks from the catalogue, and the rule of a bus: drag one onto the
 * canvas, or press it.
 */
export function Palette({ onAdd, onHide }: { onAdd: (item: PaletteItem) => void; onHide?: () => void }) {
  const plugins = usePlugins();
  const [query, setQuery] = useState("");
  const found = useMemo(() => searchPlugins(plugins.data ?? [], query), [plugins.data, query]);
  const rules = searchPlugins([RULE_ITEM], query);
  return (
    <aside className="palette" aria-label="Stages">
      {onHide && (
        <button
          type="button"
          className="link small palette-hide"
          aria-expanded={true}
          onClick={onHide}
          title="Fold the stages away: more room for the canvas"
        >
          <span aria-hidden="true">◂</span> Hide stages
        </button>
      )}
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
                  <PaletteButton item={plugin} onAdd={onAdd} />
                </li>
              ))}
            </ul>
          </section>
        );
      })}
      <section aria-label="Routing">
        <h3>Routing</h3>
        {rules.length === 0 && <p className="muted small">None match.</p>}
        <ul>
          {rules.map((item) => (
            <li key="rule">
              <PaletteButton item={item} onAdd={onAdd} />
            </li>
          ))}
        </ul>
      </section>
    </aside>
  );
}

function PaletteButton({ item, onAdd }: { item: PaletteItem; onAdd: (item: PaletteItem) => void }) {
  return (
    <button
      type="button"
      className={`palette-item kind-${item.kind}`}
      draggable
      data-testid={`palette-${item.kind}-${item.type}`}
      title={`${item.description}\nDrag onto the canvas, or press to add.`}
      onDragStart={(event) => {
        event.dataTransfer.setData(DRAG_TYPE, JSON.stringify({ kind: item.kind, type: item.type }));
        event.dataTransfer.effectAllowed = "move";
      }}
      onClick={() => onAdd(item)}
    >
      <strong>{item.title}</strong>
      <span className="small muted">{item.description}</span>
    </button>
  );
}
