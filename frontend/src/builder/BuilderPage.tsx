import {
  Background,
  Controls,
  MiniMap,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  type Connection,
} from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState, type DragEvent } from "react";

import { useChannel } from "../api/hooks";
import { ChannelTeam } from "../ui/permissions";
import { setLeaveGuard } from "../router";
import { canConnect, NODE_SPACING, type NodeKind } from "../graph/spec";
import { ChannelSettings } from "./ChannelSettings";
import { ConfigPanel } from "./ConfigPanel";
import { initialPaletteOpen, PALETTE_KEY } from "./layout";
import { Palette, type PaletteItem } from "./Palette";
import { DRAG_TYPE } from "./plugins";
import { nodeTypes } from "./StageNode";
import { useBuilder } from "./store";
import { BuilderToolbar } from "./Toolbar";
import { useStageValidation } from "./useStageValidation";

/** The drag-and-drop channel builder: palette, canvas, config panel. */
export function BuilderPage({ name }: { name: string | null }) {
  const channel = useChannel(name);
  return (
    <ChannelTeam.Provider value={channel.data?.team ?? null}>
      <ReactFlowProvider>
        <Builder name={name} />
      </ReactFlowProvider>
    </ChannelTeam.Provider>
  );
}

function Builder({ name }: { name: string | null }) {
  const channel = useChannel(name);
  const load = useBuilder((s) => s.load);
  // The channel on the canvas: null for a new one, undefined before anything was loaded.
  const [loaded, setLoaded] = useState<string | null | undefined>(undefined);
  const [otherErrors, setOtherErrors] = useState<Record<string, string[]>>({});

  // Set when a new channel is saved: the URL then follows, and the canvas must stay as it is.
  const savedAs = useRef<string | null>(null);

  useEffect(() => {
    if (name !== null && savedAs.current === name) {
      savedAs.current = null;
      setLoaded(name);
    } else if (name === null && loaded !== null) {
      load(null);
      setLoaded(null);
    } else if (name !== null && channel.data?.name === name && loaded !== name) {
      load(channel.data);
      setLoaded(name);
    }
  }, [name, channel.data, load, loaded]);

  useStageValidation();
  const selectedId = useBuilder((s) => s.selectedId);
  const dirty = useBuilder((s) => s.dirty);

  // Another page of the app (a link, Back) asks first too, while there is unsaved work.
  useEffect(
    () =>
      setLeaveGuard(() =>
        useBuilder.getState().dirty ? "The builder has unsaved changes. Leave this page and lose them?" : null,
      ),
    [],
  );
  useEffect(() => {
    if (!dirty) return;
    // Closing or reloading the tab with unsaved changes asks first.
    const warn = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener("beforeunload", warn);
    return () => window.removeEventListener("beforeunload", warn);
  }, [dirty]);
  const canvasReady = loaded === name || (name !== null && savedAs.current === name);
  const [paletteOpen, setPaletteOpen] = useState(() => initialPaletteOpen(window.innerWidth, storedPalette()));
  const togglePalette = () => {
    const open = !paletteOpen;
    setPaletteOpen(open);
    try {
      localStorage.setItem(PALETTE_KEY, open ? "open" : "closed");
    } catch {
      // storage disabled: the choice lasts until the page is left
    }
  };
  return (
    <div className="builder">
      <h1 className="visually-hidden">{name ? `Builder: ${name}` : "Builder: new channel"}</h1>
      <BuilderToolbar
        routeName={name}
        onOtherErrors={setOtherErrors}
        otherErrors={otherErrors}
        onSaved={(saved) => {
          if (saved !== name) savedAs.current = saved;
        }}
      />
      <div className={paletteOpen ? "builder-body" : "builder-body palette-closed"}>
        <BuilderPalette open={paletteOpen} onToggle={togglePalette} />
        <div className="canvas" aria-label="Channel canvas">
          {channel.isError && <p className="error pad">Could not load channel {name}.</p>}
          {canvasReady && <Canvas />}
        </div>
        <aside className="side-panel" aria-label="Settings">
          {selectedId ? <ConfigPanel nodeId={selectedId} /> : <ChannelSettings otherErrors={otherErrors} />}
        </aside>
      </div>
    </div>
  );
}

/** Where a stage added with the keyboard (or a click) goes: right of the rightmost one. */
function nextPosition(): { x: number; y: number } {
  const nodes = useBuilder.getState().nodes;
  if (nodes.length === 0) return { x: 0, y: 0 };
  const right = Math.max(...nodes.map((n) => n.position.x));
  return { x: right + NODE_SPACING, y: 0 };
}

function storedPalette(): string | null {
  try {
    return localStorage.getItem(PALETTE_KEY);
  } catch {
    return null;
  }
}

/** The stage palette, or (folded) a rail with the button that opens it; the canvas is fitted
 * to its new width after either. */
function BuilderPalette({ open, onToggle }: { open: boolean; onToggle: () => void }) {
  const addStage = useBuilder((s) => s.addStage);
  const flow = useReactFlow();
  const add = useCallback(
    (item: PaletteItem) => {
      addStage(item.kind, item.type, nextPosition());
      window.setTimeout(() => void flow.fitView({ duration: 200, maxZoom: 1 }), 50);
    },
    [addStage, flow],
  );
  const toggle = () => {
    onToggle();
    window.setTimeout(() => void flow.fitView({ duration: 200, maxZoom: 1 }), 80);
  };
  if (!open) {
    return (
      <nav className="palette-rail" aria-label="Stages">
        <button
          type="button"
          aria-expanded={false}
          onClick={toggle}
          title="Show the stages to add (sources, transforms, sinks, rules)"
        >
          <span aria-hidden="true">▸</span> Stages
        </button>
      </nav>
    );
  }
  return <Palette onAdd={add} onHide={toggle} />;
}

function Canvas() {
  const nodes = useBuilder((s) => s.nodes);
  const edges = useMarkedEdges();
  const onNodesChange = useBuilder((s) => s.onNodesChange);
  const onEdgesChange = useBuilder((s) => s.onEdgesChange);
  const deleteElements = useBuilder((s) => s.deleteElements);
  const connect = useBuilder((s) => s.connect);
  const select = useBuilder((s) => s.select);
  const addStage = useBuilder((s) => s.addStage);
  const checkpoint = useBuilder((s) => s.checkpoint);
  const undo = useBuilder((s) => s.undo);
  const redo = useBuilder((s) => s.redo);
  const flow = useReactFlow();
  // Fit a loaded channel into view once; a new canvas keeps each stage where it is dropped.
  const [fitOnInit] = useState(() => useBuilder.getState().nodes.length > 0);

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      const target = event.target as HTMLElement | null;
      if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) return;
      if (!(event.ctrlKey || event.metaKey)) return;
      const key = event.key.toLowerCase();
      if (key === "z" && !event.shiftKey) {
        event.preventDefault();
        undo();
      } else if (key === "y" || (key === "z" && event.shiftKey)) {
        event.preventDefault();
        redo();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [undo, redo]);

  const onDrop = useCallback(
    (event: DragEvent) => {
      const raw = event.dataTransfer.getData(DRAG_TYPE);
      if (!raw) return;
      event.preventDefault();
      const { kind, type } = JSON.parse(raw) as { kind: NodeKind; type: string };
      const position = flow.screenToFlowPosition({ x: event.clientX - 80, y: event.clientY - 30 });
      addStage(kind, type, position);
    },
    [addStage, flow],
  );

  return (
    <ReactFlow
      nodes={nodes}
      edges={edges}
      nodeTypes={nodeTypes}
      onNodesChange={onNodesChange}
      onEdgesChange={onEdgesChange}
      onConnect={(c: Connection) => {
        const before = useBuilder.getState().nodes.length;
        connect(c.source, c.target);
        // A fork adds rule nodes and moves the branches right: keep them in view.
        if (useBuilder.getState().nodes.length > before)
          window.setTimeout(() => void flow.fitView({ duration: 200, maxZoom: 1 }), 50);
      }}
      isValidConnection={(c) => canConnect(useBuilder.getState().nodes, c.source, c.target)}
      onNodeClick={(_, node) => select(node.id)}
      onPaneClick={() => select(null)}
      onNodeDragStart={() => checkpoint()}
      onDrop={onDrop}
      onDragOver={(event) => {
        event.preventDefault();
        event.dataTransfer.dropEffect = "move";
      }}
      deleteKeyCode={["Delete", "Backspace"]}
      // The Delete key does what the "Delete stage" button does (the stage's neighbours joined),
      // in one undo step: the store deletes, React Flow's own removal is cancelled.
      onBeforeDelete={async ({ nodes: doomed, edges: cut }) => {
        deleteElements(
          doomed.map((n) => n.id),
          cut.map((e) => e.id),
        );
        return false;
      }}
      defaultEdgeOptions={{ animated: true }}
      fitView={fitOnInit}
      fitViewOptions={{ maxZoom: 1 }}
      proOptions={{ hideAttribution: true }}
    >
      <Background />
      <MiniMap pannable zoomable ariaLabel="Mini map" />
      <Controls showInteractive={false} />
    </ReactFlow>
  );
}

/** The edges, those into a branch the test bench's sample matched (or did not) marked. */
function useMarkedEdges() {
  const edges = useBuilder((s) => s.edges);
  const matches = useBuilder((s) => s.ruleMatches);
  return useMemo(() => {
    if (!matches) return edges;
    return edges.map((e) =>
      e.target in matches ? { ...e, className: matches[e.target] ? "edge-matched" : "edge-unmatched" } : e,
    );
  }, [edges, matches]);
}
