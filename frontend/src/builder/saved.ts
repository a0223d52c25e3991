import type { Channel } from "../api/types";

/** What a save did, and what runs meanwhile: a saved revision runs only once deployed. */
export function savedMessage(channel: Channel): string {
  const saved = `Saved revision ${channel.revision ?? ""} of ${channel.name}.`;
  const running = channel.deployed_revision;
  if (!channel.drift || running === null || running === undefined) return saved;
  return `${saved} Revision ${running} is deployed until you deploy this one (the channel page's Deploy).`;
}
