/** Canvas state of the builder in one small store, with undo and redo. */

import {
  applyEdgeChanges,
  applyNodeChanges,
  type Edge,
  type EdgeChange,
  type Node,
  type NodeChange,
} from "@xyflow/react";
import { create } from "zustand";

import type { ChannelSpec, ErrorPolicy, RuntimeOptions } from "../api/types";
import { newRuleName, ruleConfig, ruleName } from "../graph/rules";
import {
  canConnect,
  connect as connectEdges,
  connectionKind,
  insertRuleNodes,
  removeNode,
  specToGraph,
  type NodeKind,
  type StageData,
} from "../graph/spec";

/** A node of the canvas: a stage ("stage") or a rule of a bus ("rule"). */
export type StageNode = Node<StageData, "stage" | "rule">;

interface Snapshot {
  nodes: StageNode[];
  edges: Edge[];
  errors: ErrorPolicy | null;
  /** The spec's runtime block as loaded or chosen; null: none (the server's defaults). */
  runtime: RuntimeOptions | null;
  /** The channel's name and description, kept only by steps that changed them (an import):
   * undoing another step leaves what was typed since alone. */
  meta?: Meta;
}

interface Meta {
  name: string;
  description: string;
  team: string;
  exists: boolean;
}

export interface BuilderState extends Snapshot {
  name: string;
  description: string;
  /** The channel's team: a new channel's choice (empty: the server takes the user's one team),
   * a saved channel's own (fixed). */
  team: string;
  /** The channel exists on the server (save is a PUT). */
  exists: boolean;
  selectedId: string | null;
  /** Problems per node id and config path, from validation or the last save. */
  nodeErrors: Record<string, Record<string, string[]>>;
  past: Snapshot[];
  future: Snapshot[];
  nextId: number;
  dirty: boolean;
  lastConfigEdit: { id: string; at: number } | null;
  /** The test bench's last answer: rule node id → whether the sample event matched it. */
  ruleMatches: Record<string, boolean> | null;

  load: (channel: { name: string; description: string; spec: ChannelSpec; team?: string } | null) => void;
  /** Set the name, the description and the team. A saved channel's name and team
   * (``exists``) are fixed: a new one is ignored (the toolbar shows the name read-only). */
  setMeta: (meta: { name?: string; description?: string; team?: string }) => void;
  addStage: (kind: NodeKind, type: string, position: { x: number; y: number }) => string;
  onNodesChange: (changes: NodeChange<StageNode>[]) => void;
  onEdgesChange: (changes: EdgeChange[]) => void;
  /** Draw source → target, one undo step: a transform on source's own chain moves right after
   * it (a reorder); anything else is added beside source's links, so a second link forks the
   * channel (rule nodes are put at the head of each branch). See connectionKind in graph/spec. */
  connect: (source: string, target: string) => void;
  /** "Feeds into": replace the edge source → from (none: null) by source → to (none: null), one
   * undo step. The stage ``from`` is left unconnected; source's other links stay. */
  retarget: (source: string, from: string | null, to: string | null) => void;
  deleteNode: (id: string) => void;
  /** Delete stages (each bridged as deleteNode does) and edges in one undo step: the Delete
   * key and the "Delete stage" button do the same. */
  deleteElements: (nodeIds: string[], edgeIds: string[]) => void;
  /** Replace the canvas, name and description by an imported channel, one undo step. */
  importChannel: (channel: { name: string; description: string; spec: ChannelSpec }, exists: boolean) => void;
  setConfig: (id: string, config: Record<string, unknown>) => void;
  setErrorPolicy: (errors: ErrorPolicy | null) => void;
  setRuntime: (runtime: RuntimeOptions | null) => void;
  select: (id: string | null) => void;
  setNodeErrors: (errors: Record<string, Record<string, string[]>>) => void;
  setStageErrors: (id: string, errors: Record<string, string[]>) => void;
  checkpoint: () => void;
  undo: () => void;
  redo: () => void;
  markSaved: () => void;
  setRuleMatches: (matches: Record<string, boolean> | null) => void;
}

const HISTORY = 100;
const CONFIG_UNDO_GROUP_MS = 1500;

function snapshot(state: Snapshot & Meta, withMeta = false): Snapshot {
  const canvas = { nodes: state.nodes, edges: state.edges, errors: state.errors, runtime: state.runtime };
  return withMeta
    ? { ...canvas, meta: { name: state.name, description: state.description, team: state.team, exists: state.exists } }
    : canvas;
}

/** A snapshot as state to restore: its meta, when it has one, spread out. */
function restore({ meta, ...canvas }: Snapshot): Partial<BuilderState> {
  return meta ? { ...canvas, ...meta } : canvas;
}

export const useBuilder = create<BuilderState>()((set, get) => {
  /** Record the current canvas in the undo history, then apply a change. */
  const change = (update: Partial<BuilderState>) =>
    set((state) => ({
      past: [...state.past, snapshot(state)].slice(-HISTORY),
      future: [],
      dirty: true,
      lastConfigEdit: null,
      ruleMatches: null,
      ...update,
    }));

  return {
    nodes: [],
    edges: [],
    errors: null,
    runtime: null,
    name: "",
    description: "",
    team: "",
    exists: false,
    selectedId: null,
    nodeErrors: {},
    past: [],
    future: [],
    nextId: 1,
    dirty: false,
    lastConfigEdit: null,
    ruleMatches: null,

    load: (channel) => {
      const graph = channel ? specToGraph(channel.spec) : { nodes: [], edges: [] };
      set({
        nodes: graph.nodes as StageNode[],
        edges: graph.edges,
        errors: channel?.spec.errors ?? null,
        runtime: channel?.spec.runtime ?? null,
        name: channel?.name ?? "",
        description: channel?.description ?? "",
        team: channel?.team ?? "",
        exists: channel !== null,
        selectedId: null,
        nodeErrors: {},
        past: [],
        future: [],
        nextId: graph.nodes.length + 1,
        dirty: false,
        lastConfigEdit: null,
        ruleMatches: null,
      });
    },

    setMeta: (meta) =>
      set((state) => {
        // A saved channel keeps its name (save is a PUT to it): a new one would save nowhere.
        const { name, team, ...rest } = meta;
        if (state.exists) {
          // a saved channel keeps its name and team
          const fixed = (name !== undefined && name !== state.name) || (team !== undefined && team !== state.team);
          if (fixed) return Object.keys(rest).length > 0 ? { ...rest, dirty: true } : {};
        }
        return { ...meta, dirty: true };
      }),

    addStage: (kind, type, position) => {
      const id = `n${get().nextId}`;
      const names = get()
        .nodes.filter((n) => n.data.kind === "rule")
        .map((n) => ruleName(n.data.config));
      const node: StageNode =
        kind === "rule"
          ? {
              id,
              type: "rule",
              position,
              data: { kind, type: "rule", config: ruleConfig({ name: newRuleName(names) }) },
            }
          : { id, type: "stage", position, data: { kind, type, config: {} } };
      change({ nodes: [...get().nodes, node], nextId: get().nextId + 1, selectedId: id });
      return id;
    },

    onNodesChange: (changes) => {
      const removed = changes.filter((c) => c.type === "remove").map((c) => c.id);
      if (removed.length > 0) {
        removed.forEach((id) => get().deleteNode(id));
        return;
      }
      // Moves and selection are not undo steps of their own; a drag records one (checkpoint).
      // A node selected by click or keyboard (Enter on a focused node) opens its settings.
      const selected = changes.find((c) => c.type === "select" && c.selected);
      set((state) => ({
        nodes: applyNodeChanges(changes, state.nodes),
        ...(selected && "id" in selected ? { selectedId: selected.id } : {}),
      }));
    },

    onEdgesChange: (changes) => {
      const removing = changes.some((c) => c.type === "remove");
      if (removing) change({ edges: applyEdgeChanges(changes, get().edges) });
      else set((state) => ({ edges: applyEdgeChanges(changes, state.edges) }));
    },

    connect: (source, target) => {
      const { nodes, edges } = get();
      if (!canConnect(nodes, source, target) || connectionKind(nodes, edges, source, target) === "exists") return;
      // A second stage drawn from the end of the shared chain forks the channel into rules:
      // each branch gets a rule node (one undo step with the edge). See connectionKind.
      let nextId = get().nextId;
      const forked = insertRuleNodes(nodes, connectEdges(nodes, edges, source, target), source, () => `n${nextId++}`);
      change({ nodes: forked.nodes as StageNode[], edges: forked.edges as Edge[], nextId });
    },

    retarget: (source, from, to) => {
      const { nodes } = get();
      const edges = get().edges.filter((e) => !(e.source === source && e.target === from));
      let nextId = get().nextId;
      if (to !== null && canConnect(nodes, source, to)) {
        const forked = insertRuleNodes(nodes, connectEdges(nodes, edges, source, to), source, () => `n${nextId++}`);
        change({ nodes: forked.nodes as StageNode[], edges: forked.edges as Edge[], nextId });
        return;
      }
      change({ edges: edges as Edge[] });
    },

    deleteNode: (id) => get().deleteElements([id], []),

    deleteElements: (nodeIds, edgeIds) => {
      const gone = new Set(nodeIds.filter((id) => get().nodes.some((n) => n.id === id)));
      const cut = new Set(edgeIds);
      // Edges into or out of a deleted stage go with it (and are bridged); others only if named.
      let edges = get().edges.filter((e) => !cut.has(e.id) || gone.has(e.source) || gone.has(e.target));
      let nodes = get().nodes;
      for (const id of gone) {
        const removed = removeNode(nodes, edges, id);
        nodes = removed.nodes as StageNode[];
        edges = removed.edges as Edge[];
      }
      if (gone.size === 0 && edges.length === get().edges.length) return;
      const nodeErrors = { ...get().nodeErrors };
      for (const id of gone) delete nodeErrors[id];
      const selectedId = get().selectedId;
      change({ nodes, edges, nodeErrors, selectedId: selectedId !== null && gone.has(selectedId) ? null : selectedId });
    },

    importChannel: (channel, exists) => {
      const graph = specToGraph(channel.spec);
      set((state) => ({
        past: [...state.past, snapshot(state, true)].slice(-HISTORY),
        future: [],
        nodes: graph.nodes as StageNode[],
        edges: graph.edges,
        errors: channel.spec.errors ?? null,
        runtime: channel.spec.runtime ?? null,
        name: channel.name,
        description: channel.description,
        exists,
        selectedId: null,
        nodeErrors: {},
        nextId: Math.max(state.nextId, graph.nodes.length + 1),
        dirty: true,
        lastConfigEdit: null,
        ruleMatches: null,
      }));
    },

    setConfig: (id, config) =>
      set((state) => {
        const node = state.nodes.find((n) => n.id === id);
        if (!node || JSON.stringify(node.data.config) === JSON.stringify(config)) return {};
        // Typing is one undo step per pause, as in a text editor.
        const now = Date.now();
        const last = state.lastConfigEdit;
        const grouped = last !== null && last.id === id && now - last.at < CONFIG_UNDO_GROUP_MS;
        return {
          nodes: state.nodes.map((n) => (n.id === id ? { ...n, data: { ...n.data, config } } : n)),
          dirty: true,
          ruleMatches: null,
          lastConfigEdit: { id, at: now },
          ...(grouped ? {} : { past: [...state.past, snapshot(state)].slice(-HISTORY), future: [] }),
        };
      }),

    setErrorPolicy: (errors) => change({ errors }),

    setRuntime: (runtime) => {
      if (JSON.stringify(runtime) === JSON.stringify(get().runtime)) return;
      change({ runtime });
    },

    select: (id) => set({ selectedId: id }),

    setNodeErrors: (nodeErrors) => set({ nodeErrors }),

    setStageErrors: (id, errors) =>
      set((state) => {
        const nodeErrors = { ...state.nodeErrors };
        if (Object.keys(errors).length === 0) delete nodeErrors[id];
        else nodeErrors[id] = errors;
        return { nodeErrors };
      }),

    checkpoint: () => set((state) => ({ past: [...state.past, snapshot(state)].slice(-HISTORY), future: [] })),

    undo: () =>
      set((state) => {
        const previous = state.past[state.past.length - 1];
        if (!previous) return {};
        return {
          ...restore(previous),
          past: state.past.slice(0, -1),
          future: [snapshot(state, previous.meta !== undefined), ...state.future],
          dirty: true,
          ruleMatches: null,
        };
      }),

    redo: () =>
      set((state) => {
        const next = state.future[0];
        if (!next) return {};
        return {
          ...restore(next),
          past: [...state.past, snapshot(state, next.meta !== undefined)],
          future: state.future.slice(1),
          dirty: true,
          ruleMatches: null,
        };
      }),

    markSaved: () => set({ exists: true, dirty: false }),

    setRuleMatches: (ruleMatches) => set({ ruleMatches }),
  };
});
