import { useChannelAction, useMe } from "../api/hooks";
import type { Channel } from "../api/types";
import { href } from "../router";
import { seenTeams, useCan } from "../ui/permissions";

/** The first thing a new user sees while no channel is asked to run: what to do next, starting
 * with the demo channel when the server marks one among `channels` (its `demo` flag). */
export function Welcome({ channels, loading }: { channels: Channel[]; loading: boolean }) {
  const action = useChannelAction();
  const operate = useCan("operate");
  const edit = useCan("edit");
  const seen = seenTeams(useMe().data);
  const demo = channels.find((c) => c.demo);
  const anyRunning = channels.some((c) => c.target_state !== "STOPPED");
  if (loading || anyRunning) return null;
  return (
    <section className="welcome" aria-label="Getting started">
      <h2>Welcome to Sluice</h2>
      <p>
        A channel moves events from one <strong>source</strong> through a chain of <strong>transforms</strong> to one{" "}
        <strong>sink</strong>, running on Spark.
      </p>
      <ol>
        {demo ? (
          <li>
            Start the demo channel <strong>{demo.name}</strong>: it generates orders, keeps EU orders over 100 and shows
            them in a live tail.{" "}
            <button
              type="button"
              className="primary"
              disabled={action.isPending || !operate.allowed}
              title={operate.reason || undefined}
              onClick={() =>
                action.mutate(
                  { name: demo.name, action: "start" },
                  { onSuccess: () => (window.location.hash = href({ page: "channel", name: demo.name })) },
                )
              }
            >
              Start {demo.name}
            </button>
            {action.error && (
              <span className="error small" role="alert">
                {" "}
                {action.error.message}
              </span>
            )}
          </li>
        ) : null}
        <li>
          Or build your own: drag a source, transforms and a sink onto the canvas, connect them, save and start.{" "}
          <a href={href({ page: "build", name: null })}>Open the builder</a>
        </li>
        <li>
          Then watch it on its channel page: state, events per second, lag, tasks, revisions and offsets.{" "}
          <a href={href({ page: "workers" })}>Workers</a> shows where channels run.
        </li>
      </ol>
      {(!operate.allowed || !edit.allowed) && (
        <p className="small muted">
          {seen && `${seen} `}
          {!edit.allowed && "Building and saving channels needs the editor role. "}
          {!operate.allowed && "Starting and stopping them needs the operator role. "}
          Ask an administrator for a role you need.
        </p>
      )}
    </section>
  );
}
