/**
 * Close a test's HTTP server without waiting for kept-alive connections: an HTTP/1 server
 * (Node ≥ 18.2) drops them at once; other servers just close.
 */
export function closeServer(server: { close(cb: () => void): unknown; closeAllConnections?: () => void }): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections?.();
  });
}
