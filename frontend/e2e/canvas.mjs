// Drawing on the builder's canvas from a browser script (shared by builder.e2e.mjs and bus.e2e.mjs).

/** Drop a palette item onto the canvas pane at (x, y). */
export async function dragToCanvas(page, testId, x, y) {
  const pane = page.locator(".react-flow__pane");
  await page.getByTestId(testId).dragTo(pane, { targetPosition: { x, y } });
}

/** The canvas node whose inner element has data-testid `node-<node>`. */
export const canvasNode = (page, node) => page.locator(`.react-flow__node:has([data-testid="node-${node}"])`);

/** Drag from one node's output handle to another's input; retried while the canvas settles.
 * A node is its test id's tail ("transform-filter") or a locator of its .react-flow__node. */
export async function connect(page, fromNode, toNode) {
  const node = (n) => (typeof n === "string" ? canvasNode(page, n) : n);
  const from = node(fromNode).locator(".react-flow__handle.source");
  const to = node(toNode).locator(".react-flow__handle.target");
  const before = await page.locator(".react-flow__edge").count();
  // A drag that starts while the canvas is still re-laying out (side panel opening) can miss
  // the handle: measure again and retry a few times before giving up.
  for (let attempt = 0; attempt < 3; attempt++) {
    await page.waitForTimeout(200);
    const a = await from.boundingBox();
    const b = await to.boundingBox();
    await page.mouse.move(a.x + a.width / 2, a.y + a.height / 2);
    await page.mouse.down();
    await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 12 });
    await page.mouse.up();
    // New edges show once their nodes are measured (a fork adds rule nodes first): wait a
    // moment before deciding the drag missed, or a retry would draw a second edge.
    const drawn = await page
      .waitForFunction((n) => document.querySelectorAll(".react-flow__edge").length > n, before, { timeout: 2000 })
      .then(
        () => true,
        () => false,
      );
    if (drawn) return;
  }
  throw new Error(`could not connect ${fromNode} to ${toNode}`);
}

export async function selectNode(page, node) {
  await canvasNode(page, node).click();
}

/** Drop a palette item (found by searching) and wait for its node (`node-<kind>-<type>`,
 * the `nth` of them when there are several). */
export async function addStage(page, kind, type, search, x, y, nth = 0) {
  await page.getByLabel("Search stages").fill(search);
  await dragToCanvas(page, `palette-${kind}-${type}`, x, y);
  await page.getByTestId(`node-${kind}-${type}`).nth(nth).waitFor();
  await page.getByLabel("Search stages").fill("");
}
