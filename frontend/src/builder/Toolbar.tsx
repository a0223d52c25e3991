import { useReactFlow } from "@xyflow/react";
import { useRef, useState } from "react";

import { ApiError } from "../api/client";
import { channelExists, useSaveChannel } from "../api/hooks";
import { errorsByNode, graphToSpec, type GraphProblem } from "../graph/spec";
import { href, navigate } from "../router";
import { useCan } from "../ui/permissions";
import { channelNameProblem, FIXED_NAME_NOTE, saveProblemsText } from "./channelName";
import { chooseImportName, downloadJson, parseChannelFile } from "./io";
import { useBuilder } from "./store";
import { savedMessage } from "./saved";

interface Props {
  routeName: string | null;
  otherErrors: Record<string, string[]>;
  onOtherErrors: (errors: Record<string, string[]>) => void;
  onSaved: (name: string) => void;
}

/** Name, save, undo/redo, fit view, import/export, and what keeps the channel from saving. */
export function BuilderToolbar({ routeName, otherErrors, onOtherErrors, onSaved }: Props) {
  const state = useBuilder();
  const save = useSaveChannel();
  const edit = useCan("edit");
  const flow = useReactFlow();
  const fileInput = useRef<HTMLInputElement>(null);
  const [problems, setProblems] = useState<GraphProblem[]>([]);
  const [message, setMessage] = useState<string>("");

  const onSave = () => {
    setMessage("");
    onOtherErrors({});
    const result = graphToSpec(state.nodes, state.edges, state.errors, state.runtime);
    if (!result.ok) {
      setProblems(result.problems);
      return;
    }
    setProblems([]);
    const name = state.name.trim();
    const nameProblem = channelNameProblem(name, true);
    if (nameProblem) {
      onOtherErrors({ name: [nameProblem] });
      setMessage(saveProblemsText({ name: true, stages: 0, settings: 0, other: 0 }));
      return;
    }
    save.mutate(
      { name, description: state.description, spec: result.spec, exists: state.exists, team: state.team },
      {
        onSuccess: (channel) => {
          state.setNodeErrors({});
          state.markSaved();
          setMessage(savedMessage(channel));
          onSaved(channel.name);
          if (routeName !== channel.name) navigate({ page: "build", name: channel.name });
        },
        onError: (error) => {
          if (error instanceof ApiError && error.status === 400) {
            const configs = Object.fromEntries(state.nodes.map((n) => [n.id, n.data.config]));
            const grouped = errorsByNode(error.fieldErrors(), result.stages, configs);
            state.setNodeErrors(grouped.nodes);
            onOtherErrors(grouped.other);
            // The channel's settings (error policy, runtime) show in the side panel with no
            // stage selected: show them when the server found something wrong there.
            if (Object.keys(grouped.other).some(isChannelSetting)) state.select(null);
            const others = Object.keys(grouped.other);
            setMessage(
              saveProblemsText({
                name: others.includes("name"),
                stages: Object.keys(grouped.nodes).length,
                settings: others.filter(isChannelSetting).length,
                other: others.filter((p) => p !== "name" && !isChannelSetting(p)).length,
              }),
            );
          } else {
            setMessage(`Not saved: ${(error as Error).message}`);
          }
        },
      },
    );
  };

  const onImport = async (file: File) => {
    try {
      const channel = parseChannelFile(await file.text());
      const current = useBuilder.getState();
      const replacing = current.nodes.length > 0 || current.name.trim() !== "";
      const what = current.name.trim() ? `“${current.name.trim()}” and its canvas` : "the canvas";
      if (replacing && !window.confirm(`Replace ${what} with ${file.name}? Undo brings them back.`)) {
        setMessage(`Import of ${file.name} cancelled.`);
        return;
      }
      // A file named after a channel that exists is imported as a copy unless its name is kept.
      const target = await chooseImportName(channel.name, channelExists, (question, proposal) =>
        window.prompt(question, proposal),
      );
      if (target === null) {
        setMessage(`Import of ${file.name} cancelled.`);
        return;
      }
      state.importChannel({ ...channel, name: target.name }, target.exists);
      const as = target.exists
        ? ` (saving replaces ${target.name})`
        : target.name !== channel.name
          ? ` as a copy, ${target.name} (saving creates it)`
          : "";
      setMessage(`Imported ${file.name}${as}. Undo to go back.`);
      window.setTimeout(() => void flow.fitView({ maxZoom: 1 }), 50);
    } catch (error) {
      setMessage(`Could not import ${file.name}: ${(error as Error).message}`);
    }
  };

  const onExport = () => {
    const result = graphToSpec(state.nodes, state.edges, state.errors, state.runtime);
    if (!result.ok) {
      setProblems(result.problems);
      return;
    }
    const name = state.name.trim() || "channel";
    downloadJson(`${name}.json`, { name, description: state.description, spec: result.spec });
  };

  // The name's rule as typed; the server's word on it after a save (e.g. taken) until edited.
  // A saved channel's name is fixed (the store ignores a new one): the field says so.
  const fixedName = state.exists;
  const typed = fixedName ? "" : channelNameProblem(state.name.trim());
  const nameError = typed || (otherErrors.name ?? []).join(" ");
  const generalErrors = Object.entries(otherErrors).filter(([path]) => !isChannelSetting(path) && path !== "name");
  return (
    <div className="toolbar-wrap">
      <div className="toolbar" role="toolbar" aria-label="Builder">
        <label className="field inline">
          <span>Channel name</span>
          <input
            value={state.name}
            readOnly={fixedName}
            title={fixedName ? FIXED_NAME_NOTE : undefined}
            placeholder="e.g. eu-orders"
            onChange={(e) => {
              state.setMeta({ name: e.target.value });
              if (otherErrors.name) onOtherErrors(withoutName(otherErrors));
            }}
            aria-invalid={Boolean(nameError)}
            aria-describedby={nameError ? "channel-name-error" : fixedName ? "channel-name-fixed" : undefined}
            data-testid="channel-name"
          />
        </label>
        <button
          type="button"
          className="primary"
          onClick={onSave}
          disabled={save.isPending || !edit.allowed}
          title={edit.reason || undefined}
        >
          {save.isPending ? "Saving…" : "Save"}
        </button>
        <button type="button" onClick={state.undo} disabled={state.past.length === 0} title="Ctrl+Z">
          Undo
        </button>
        <button type="button" onClick={state.redo} disabled={state.future.length === 0} title="Ctrl+Shift+Z">
          Redo
        </button>
        <button type="button" onClick={() => void flow.fitView({ duration: 200, maxZoom: 1 })}>
          Fit view
        </button>
        <button type="button" onClick={() => fileInput.current?.click()}>
          Import…
        </button>
        <input
          ref={fileInput}
          type="file"
          accept="application/json,.json"
          hidden
          aria-label="Import channel JSON"
          onChange={(e) => {
            const file = e.target.files?.[0];
            if (file) void onImport(file);
            e.target.value = "";
          }}
        />
        <button type="button" onClick={onExport}>
          Export
        </button>
        {state.exists && routeName && (
          <a className="button" href={href({ page: "channel", name: routeName })}>
            Open channel page
          </a>
        )}
        <span className="muted small">{state.dirty ? "Unsaved changes" : state.exists ? "Saved" : ""}</span>
      </div>
      <div className="toolbar-status" role="status" aria-live="polite">
        {nameError && (
          <span id="channel-name-error" className="error name-error">
            Channel name: {nameError}
          </span>
        )}
        {fixedName && !nameError && (
          <span id="channel-name-fixed" className="muted small" data-testid="channel-name-fixed">
            {FIXED_NAME_NOTE}
          </span>
        )}
        {message && <span data-testid="save-message">{message}</span>}
        {problems.map((p) => (
          <span key={p.message} className="error">
            {p.message}
          </span>
        ))}
        {generalErrors.map(([path, messages]) => (
          <span key={path} className="error">
            {path}: {messages.join(" ")}
          </span>
        ))}
      </div>
    </div>
  );
}

function withoutName(errors: Record<string, string[]>): Record<string, string[]> {
  const rest = { ...errors };
  delete rest.name;
  return rest;
}

/** Whether a server error path is about a setting the channel settings panel shows. */
function isChannelSetting(path: string): boolean {
  return path === "team" || /^spec\.(errors|runtime)(\.|$)/.test(path);
}
