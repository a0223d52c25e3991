import { ApiError } from "../api/client";
import { usePreview } from "../api/hooks";
import { BUILT_IN_SAMPLES, tailSamples } from "./samples";
import { sampleFromSchema } from "./shape";
import { useBuilder } from "./store";
import { useShape } from "./useShape";

export const FIRST_SAMPLE = JSON.stringify(BUILT_IN_SAMPLES[0]!.event, null, 2);

/**
 * A sample event for the test benches: picked from the built-in samples or the channel's
 * latest output (its preview tail), then edited as JSON.
 */
export function SampleEventFields({ text, onText }: { text: string; onText: (text: string) => void }) {
  const name = useBuilder((s) => s.name);
  const exists = useBuilder((s) => s.exists);
  const tail = usePreview(name, exists && name !== "", false);
  const latest = tailSamples(tail.data ?? []);
  const shape = useShape();

  const pick = (value: string) => {
    if (value === "schema:0" && shape.schema) {
      onText(JSON.stringify(sampleFromSchema(shape.schema), null, 2));
      return;
    }
    const [group, index] = value.split(":");
    const sample = (group === "tail" ? latest : BUILT_IN_SAMPLES)[Number(index)];
    if (sample) onText(JSON.stringify(sample.event, null, 2));
  };

  return (
    <>
      <label className="field">
        <span>Pick a sample event</span>
        <select value="" onChange={(e) => pick(e.target.value)} onFocus={() => exists && void tail.refetch()}>
          <option value="" disabled>
            Choose one to fill the box below…
          </option>
          <optgroup label="Built-in samples">
            {BUILT_IN_SAMPLES.map((s, i) => (
              <option key={s.label} value={`builtin:${i}`}>
                {s.label}
              </option>
            ))}
          </optgroup>
          {shape.schema && (
            <optgroup label="From the schema">
              <option value="schema:0">
                Generated from {shape.origin === "discovered" ? "the discovered schema" : shape.origin}
              </option>
            </optgroup>
          )}
          {latest.length > 0 && (
            <optgroup label={`Latest events of ${name} (preview tail)`}>
              {latest.map((s, i) => (
                <option key={s.label} value={`tail:${i}`}>
                  {s.label}
                </option>
              ))}
            </optgroup>
          )}
        </select>
      </label>
      <label className="field">
        <span>Sample event (CloudEvents JSON: attributes, payload under data)</span>
        <textarea rows={9} value={text} spellCheck={false} onChange={(e) => onText(e.target.value)} />
      </label>
    </>
  );
}

/** The sample as JSON, or the message saying why it is not. */
export function parseSample(text: string): { ok: true; event: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, event: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, message: `The sample event is not JSON: ${(error as Error).message}` };
  }
}

/** An API failure as lines to show (a 400's field errors, path first). */
export function failureMessages(error: unknown): string[] {
  if (!(error instanceof ApiError)) return [String(error)];
  const messages = Object.entries(error.fieldErrors()).flatMap(([key, list]) => list.map((m) => `${key}: ${m}`));
  return messages.length ? messages : [`The test failed: ${error.message}`];
}
