/** fetch() for the console's API: same-origin session cookie plus Django's CSRF header. */

import type { FieldErrors } from "./types";

export class ApiError extends Error {
  readonly status: number;
  readonly body: unknown;

  constructor(status: number, body: unknown, message: string) {
    super(message);
    this.status = status;
    this.body = body;
  }

  /** The body as path-keyed field errors, when it is one (400 answers). */
  fieldErrors(): FieldErrors {
    if (!this.body || typeof this.body !== "object" || Array.isArray(this.body)) return {};
    const out: FieldErrors = {};
    for (const [key, value] of Object.entries(this.body as Record<string, unknown>)) {
      if (Array.isArray(value)) out[key] = value.map(String);
      else if (typeof value === "string") out[key] = [value];
    }
    return out;
  }
}

export function csrfToken(): string {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match?.[1] ? decodeURIComponent(match[1]) : "";
}

function describe(status: number, body: unknown): string {
  if (body && typeof body === "object" && "detail" in body) {
    return String((body as { detail: unknown }).detail);
  }
  return `HTTP ${status}`;
}

export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const method = (init.method ?? "GET").toUpperCase();
  const headers = new Headers(init.headers);
  headers.set("Accept", "application/json");
  if (init.body !== undefined) headers.set("Content-Type", "application/json");
  if (method !== "GET" && method !== "HEAD") headers.set("X-CSRFToken", csrfToken());
  const response = await fetch(`/api/v1/${path}`, {
    ...init,
    method,
    headers,
    credentials: "same-origin",
  });
  if (response.status === 401 || response.status === 403) {
    if (response.status === 401 || !csrfToken()) {
      window.location.assign(`/login/?next=${encodeURIComponent(window.location.pathname)}`);
    }
  }
  const text = await response.text();
  let body: unknown = null;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  if (!response.ok) throw new ApiError(response.status, body, describe(response.status, body));
  return body as T;
}

export function post<T>(path: string, body?: unknown): Promise<T> {
  return api<T>(path, {
    method: "POST",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}
