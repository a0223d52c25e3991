/** A stage's own problems (not a field's): listed above its form. */
export function StageProblems({ messages }: { messages: string[] | undefined }) {
  if (!messages) return null;
  return (
    <div role="alert">
      <ul className="error small">
        {messages.map((m) => (
          <li key={m}>{m}</li>
        ))}
      </ul>
    </div>
  );
}

export function withoutKey<T>(record: Record<string, T>, key: string): Record<string, T> {
  const copy = { ...record };
  delete copy[key];
  return copy;
}
