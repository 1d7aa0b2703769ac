/* Submission page: while queued or running, ask status.json every few seconds and reload the
   page once scoring has finished (scored or failed). */
(function () {
  "use strict";
  var card = document.getElementById("status");
  var url = card && card.getAttribute("data-poll-url");
  if (!url || !window.fetch) { return; }
  var current = card.getAttribute("data-status");
  var text = document.getElementById("status-text");
  var hint = document.getElementById("status-hint");
  var hints = {queued: "waiting for a worker to score it.", running: "a worker is scoring it now."};
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
        if (body.status === "scored" || body.status === "failed") {
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
          if (hints[current]) { hint.textContent = hints[current]; }
        }
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
