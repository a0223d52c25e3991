import { useDeleteChannel } from "../api/hooks";
import { navigate } from "../router";
import { useCan } from "../ui/permissions";

/** Delete a channel after confirmation (editor role); the server's refusal goes to onError. */
export function DeleteChannelButton({ name, onError }: { name: string; onError: (messages: string[]) => void }) {
  const remove = useDeleteChannel();
  const edit = useCan("edit");
  const onClick = () => {
    if (!window.confirm(`Delete channel ${name}? Its connector stops; its checkpoint stays on the runtime.`)) return;
    remove.mutate(name, {
      onSuccess: () => navigate({ page: "channels" }),
      onError: (error) => onError([`${name}: ${error.message}`]),
    });
  };
  return (
    <button
      type="button"
      className="danger"
      onClick={onClick}
      disabled={remove.isPending || !edit.allowed}
      title={edit.reason || undefined}
    >
      Delete
    </button>
  );
}
