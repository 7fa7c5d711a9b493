/* gpu-wizard classroom page (wizard/web/pages.py): runs before textual.js, the browser terminal.
 *
 * - Keeps the websocket textual.js opens, so the on-screen keys (phones have no F-keys or Esc) type
 *   into the same session, in order, as the keyboard does.
 * - Turns the server's close code into the page's notice: the session ended, moved to another tab,
 *   the classroom is full, too many sessions from this address, or the connection was lost (the
 *   session is kept: reloading reattaches to it).
 * - Without ?fontsize=, picks a font size that fits 80 columns on a narrow screen.
 * - On a software WebGL (SwiftShader, llvmpipe: a VM, a thin client, a browser without a GPU) the
 *   terminal's WebGL renderer draws its letters at the pixel ratio's scale on a high-density screen
 *   (half the columns visible at 2x); there the terminal uses its DOM renderer instead.
 */
(() => {
  "use strict";
  const REASONS = { 4000: "ended", 4001: "moved", 4002: "failed", 4008: "budget", 4429: "too-many", 4503: "full" };
  const FIT_COLUMNS = 80;
  const CELL_WIDTH = 0.6; // Roboto Mono's advance, in ems
  const NativeWebSocket = window.WebSocket;
  let session = null;

  class ClassroomWebSocket extends NativeWebSocket {
    constructor(url, protocols) {
      super(url, protocols);
      session = this;
      this.addEventListener("close", (event) => {
        document.body.dataset.ended = REASONS[event.code] || "lost";
      });
    }
  }
  window.WebSocket = ClassroomWebSocket;

  function softwareWebGL() {
    try {
      const gl = document.createElement("canvas").getContext("webgl2");
      if (!gl) return false;
      const info = gl.getExtension("WEBGL_debug_renderer_info");
      const renderer = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
      return /swiftshader|llvmpipe|softpipe|software/i.test(renderer);
    } catch (error) {
      return false;
    }
  }

  if (softwareWebGL()) {
    const getContext = HTMLCanvasElement.prototype.getContext;
    HTMLCanvasElement.prototype.getContext = function (kind, options) {
      return kind === "webgl2" ? null : getContext.call(this, kind, options);
    };
    document.documentElement.dataset.renderer = "dom";
  }

  function fitFont(terminal) {
    if (terminal.dataset.fit !== "true") return;
    const preferred = Number(terminal.dataset.fontSize);
    const width = terminal.clientWidth || window.innerWidth;
    const fitting = Math.floor((10 * width) / (FIT_COLUMNS * CELL_WIDTH)) / 10 - 0.1;
    terminal.dataset.fontSize = String(Math.max(6, Math.min(preferred, fitting)));
  }

  function type(keys) {
    if (session !== null && session.readyState === NativeWebSocket.OPEN) {
      session.send(JSON.stringify(["stdin", keys]));
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const terminal = document.querySelector(".textual-terminal");
    if (terminal !== null) fitFont(terminal);
    for (const button of document.querySelectorAll("#keys button")) {
      // pointerdown, and no focus taken: the terminal keeps the keyboard (and a phone its soft keyboard)
      button.addEventListener("pointerdown", (event) => event.preventDefault());
      button.addEventListener("click", (event) => {
        event.preventDefault();
        type(JSON.parse(button.dataset.keys));
      });
    }
  });
})();
