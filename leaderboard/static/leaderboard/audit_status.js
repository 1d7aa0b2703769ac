/* Audit report: while queued or running, ask status.json every few seconds (showing the AUL
   probe's epochs as they pass) and reload the page once the audit is done or failed. */
(function () {
  "use strict";
  var card = document.getElementById("status");
  var url = card && card.getAttribute("data-poll-url");
  if (!url || !window.fetch) { return; }
  var current = card.getAttribute("data-status");
  var text = document.getElementById("status-text");
  var hint = document.getElementById("status-hint");
  var delay = 1000;

  function describe(body) {
    if (body.status === "queued") { return "waiting for a worker."; }
    var p = body.progress;
    return p ? "a worker is running it: epoch " + p.epochs_done + " of " + p.epochs_total + "."
             : "a worker is running it.";
  }

  function poll() {
    window.fetch(url, {headers: {Accept: "application/json"}, credentials: "same-origin",
                       cache: "no-store"})
      .then(function (response) {
        if (!response.ok) { throw new Error(String(response.status)); }
        return response.json();
      })
      .then(function (body) {
        if (body.status === "done" || body.status === "failed") {
          window.location.reload();
          return;
        }
        if (body.status !== current) {
          card.classList.remove("status-" + current);
          text.classList.remove("status-" + current);
          current = body.status;
          card.classList.add("status-" + current);
          text.classList.add("status-" + current);
          card.setAttribute("data-status", current);
          text.textContent = current;
        }
        hint.textContent = describe(body);
        delay = Math.min(delay * 1.5, 5000);
        window.setTimeout(poll, delay);
      })
      .catch(function () {
        delay = Math.min(delay * 2, 30000);
        window.setTimeout(poll, delay);
      });
  }
  window.setTimeout(poll, delay);
})();
