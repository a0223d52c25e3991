import { HEALTH_LEVELS, SHOWN_STATES } from "../api/enums";
import { useMe } from "../api/hooks";
import type { FleetParams } from "./fleet";

/** The list's filters: search and labels as typed (the page applies them after a pause), state
 * and health from the API's own lists, each at once; the team, for a user who sees several. */
export function FleetFilters({
  params,
  searchText,
  labelText,
  onSearchText,
  onLabelText,
  onChange,
}: {
  params: FleetParams;
  searchText: string;
  labelText: string;
  onSearchText: (text: string) => void;
  onLabelText: (text: string) => void;
  onChange: (patch: Partial<FleetParams>) => void;
}) {
  const teams = useMe().data?.teams ?? [];
  return (
    <div className="fleet-filters" role="search">
      <input
        type="search"
        aria-label="Search channels by name or description"
        placeholder="Search name or description"
        value={searchText}
        onChange={(e) => onSearchText(e.target.value)}
        data-testid="fleet-search"
      />
      <MultiSelect
        label="State"
        options={SHOWN_STATES}
        value={params.states}
        onChange={(states) => onChange({ states })}
      />
      <MultiSelect
        label="Health"
        options={HEALTH_LEVELS}
        value={params.healths}
        onChange={(healths) => onChange({ healths })}
      />
      {teams.length > 1 && (
        <select
          aria-label="Team"
          value={params.team}
          onChange={(e) => onChange({ team: e.target.value })}
          data-testid="fleet-team"
        >
          <option value="">All teams</option>
          {teams.map((team) => (
            <option key={team.name} value={team.name}>
              Team: {team.name}
            </option>
          ))}
        </select>
      )}
      <input
        type="text"
        aria-label="Filter by labels (key=value or key, comma-separated)"
        placeholder="Labels: team=payments, tier"
        value={labelText}
        onChange={(e) => onLabelText(e.target.value)}
        data-testid="fleet-labels"
      />
    </div>
  );
}

/** A compact any-of filter: a select whose options toggle (shown as "State: FAILED, PAUSED"). */
function MultiSelect<T extends string>({
  label,
  options,
  value,
  onChange,
}: {
  label: string;
  options: T[];
  value: T[];
  onChange: (value: T[]) => void;
}) {
  return (
    <select
      aria-label={`Filter by ${label.toLowerCase()}`}
      data-testid={`filter-${label.toLowerCase()}`}
      value=""
      onChange={(e) => {
        const option = options.find((o) => o === e.target.value);
        if (e.target.value === "*") onChange([]);
        else if (option) onChange(value.includes(option) ? value.filter((v) => v !== option) : [...value, option]);
      }}
    >
      <option value="">
        {label}: {value.length ? value.join(", ") : "any"}
      </option>
      {options.map((option) => (
        <option key={option} value={option}>
          {value.includes(option) ? "✓ " : ""}
          {option}
        </option>
      ))}
      {value.length > 0 && <option value="*">(any {label.toLowerCase()})</option>}
    </select>
  );
}
