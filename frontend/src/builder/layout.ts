/** The builder's layout at the window's width: whether the stage palette starts open. */

/** Below this width (px) the palette starts folded into a rail, so the canvas keeps room to
 * read (at 1,024 px three columns left it under 500 px). */
export const NARROW_BUILDER = 1200;

export const PALETTE_KEY = "sluice.builder.palette";

/** Whether the palette starts open: as the user last left it ("open" / "closed", kept in the
 * browser), else open on a wide window and folded on a narrow one. */
export function initialPaletteOpen(width: number, stored: string | null): boolean {
  if (stored === "open") return true;
  if (stored === "closed") return false;
  return width > NARROW_BUILDER;
}
