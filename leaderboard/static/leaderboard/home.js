// The home page's live filter: the cards the search form's query and modality match stay
// shown as one types, as the server shows them for ?q=&modality= (leaderboard/presentation/
// selectors.py: a part of the name or slug in lower case, and the modality); the address
// keeps the query, so a reload or a shared link shows the same cards.
(function () {
  "use strict";
  var form = document.querySelector("form.benchmark-search");
  if (!form) { return; }
  var query = form.elements.namedItem("q");
  var modality = form.elements.namedItem("modality");
  var cards = Array.prototype.slice.call(document.querySelectorAll(".benchmark-grid > .benchmark"));
  var count = document.getElementById("benchmark-count");
  var none = document.getElementById("benchmark-none");

  function apply() {
    var needle = query.value.trim().toLowerCase();
    var wanted = modality.value;
    var shown = 0;
    cards.forEach(function (card) {
      var match = card.getAttribute("data-search").indexOf(needle) !== -1 &&
        (wanted === "" || card.getAttribute("data-modality") === wanted);
      card.hidden = !match;
      if (match) { shown += 1; }
    });
    count.textContent = shown + " of " + cards.length + " benchmark" + (cards.length === 1 ? "" : "s");
    none.hidden = shown > 0;
    var params = new URLSearchParams();
    if (needle) { params.set("q", query.value.trim()); }
    if (wanted) { params.set("modality", wanted); }
    var search = params.toString();
    history.replaceState(null, "", search ? "?" + search : window.location.pathname);
  }

  query.addEventListener("input", apply);
  modality.addEventListener("change", apply);
}());
