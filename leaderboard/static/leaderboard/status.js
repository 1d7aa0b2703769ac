/* A page with a pending status card (a submission, a label audit): while queued or running,
   ask the card's status.json every few seconds, show the status and the server's hint (e.g.
   the audit's epochs), and reload the page once it is no longer pending. */
(function () {
  "use strict";
  var card = document.getElementById("status");
  var url = card && card.getAttribute("data-poll-url");
  if (!url || !window.fetch) { return; }
  var current = card.getAttribute("data-status");
  var text = document.getElementById("status-text");
  var hint = document.getElementById("status-hint");
  var delay = 1000;

  function schedule(ms) { window.setTimeout(poll, ms); }

  function poll() {
    window.fetch(url, {headers: {Accept: "application/json"}, credentials: "same-origin",
                       cache: "no-store"})
      .then(function (response) {
        if (!response.ok) { throw new Error(String(response.status)); }
        return response.json();
      })
      .then(function (body) {
        if (body.status !== "queued" && body.status !== "running") {
          window.location.reload();  // finished: the page itself shows the outcome
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
        if (hint && body.hint) { hint.textContent = body.hint; }
        delay = Math.min(delay * 1.5, 5000);
        schedule(delay);
      })
      .catch(function () {
        delay = Math.min(delay * 2, 30000);
        schedule(delay);
      });
  }
  schedule(delay);
})();
