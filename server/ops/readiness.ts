/** A readiness check for `/readyz` (server/app.ts): resolves when fine, rejects with the reason. Features add theirs. */
export interface ReadinessCheck {
  name: string;
  check: () => Promise<void>;
  /**
   * Reported but never failing `/readyz` (e.g. history: a database outage delays history,
   * and taking the node out of service for it would stop calls).
   */
  informational?: boolean;
}
