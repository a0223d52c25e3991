import { href } from "../router";
import { useCan } from "../ui/permissions";

/** What a channel page shows for a name no channel has: no actions, nothing polled. */
export function ChannelNotFound({ name }: { name: string }) {
  const edit = useCan("edit");
  return (
    <section className="stack not-found" aria-labelledby="not-found-title" data-testid="channel-not-found">
      <p className="small muted">
        <a href={href({ page: "channels" })}>Channels</a> /
      </p>
      <h1 id="not-found-title">No channel named “{name}”</h1>
      <p>
        There is no channel with this name: it may have been deleted, or the link or name is mistyped. Channel names are
        lower-case letters, digits, “-” and “_”.
      </p>
      <p className="row">
        <a className="button primary" href={href({ page: "channels" })}>
          All channels
        </a>
        {edit.allowed && (
          <a className="button" href={href({ page: "build", name: null })}>
            Build a new channel
          </a>
        )}
      </p>
    </section>
  );
}
