import { describe, expect, it } from "vitest";

import { initialPaletteOpen } from "./layout";

describe("the builder's palette", () => {
  it("starts folded on a narrow window and open on a wide one", () => {
    expect(initialPaletteOpen(1024, null)).toBe(false);
    expect(initialPaletteOpen(1440, null)).toBe(true);
  });

  it("stays as the user left it", () => {
    expect(initialPaletteOpen(1024, "open")).toBe(true);
    expect(initialPaletteOpen(1440, "closed")).toBe(false);
    expect(initialPaletteOpen(1440, "garbage")).toBe(true);
  });
});
