import { type FleetParams, PAGE_SIZES, rangeText } from "./fleet";

/** Previous and next page, where the list is ("51–100 of 10,000") and how many per page. A page
 * turn keeps the filters and the selection; a new page size starts again at the first page. */
export function ChannelsPager({
  params,
  shown,
  count,
  onOffset,
  onChange,
}: {
  params: FleetParams;
  /** Rows on the page shown. */
  shown: number;
  count: number;
  onOffset: (offset: number) => void;
  onChange: (patch: Partial<FleetParams>) => void;
}) {
  return (
    <nav className="pager" aria-label="Pages of channels">
      <button
        type="button"
        disabled={params.offset === 0}
        onClick={() => onOffset(Math.max(0, params.offset - params.limit))}
      >
        ‹ Previous
      </button>
      <span className="small" data-testid="page-range">
        {rangeText(params.offset, shown, count)}
      </span>
      <button
        type="button"
        disabled={params.offset + shown >= count}
        onClick={() => onOffset(params.offset + params.limit)}
        data-testid="next-page"
      >
        Next ›
      </button>
      <label className="small">
        Per page{" "}
        <select
          value={params.limit}
          onChange={(e) => onChange({ limit: Number(e.target.value) })}
          aria-label="Channels per page"
        >
          {PAGE_SIZES.map((size) => (
            <option key={size} value={size}>
              {size}
            </option>
          ))}
        </select>
      </label>
    </nav>
  );
}
