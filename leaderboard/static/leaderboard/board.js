/* The board's compare bar (leaderboard/_board.html, `#compare-pick`): it names the ticked
   rows, offers Compare when exactly two are ticked, and when a third is ticked unticks the
   oldest and says so in the live region (#compare-pick-live). The bar itself is shown by the
   stylesheet once a row is ticked, so it appears without this script too; the form then
   sends whatever is ticked and the server answers other than two with this page, still
   ticked. While the bar is shown, the page keeps its height clear at the bottom when it
   scrolls a focused row into view (scroll-padding), so the bar never covers that row. */
(function () {
  "use strict";
  var form = document.getElementById("compare-pick");
  if (!form) { return; }
  var boxes = Array.prototype.slice.call(
    document.querySelectorAll('input[type="checkbox"][form="compare-pick"]'));
  var status = document.getElementById("compare-pick-status");
  var live = document.getElementById("compare-pick-live");
  var submit = document.getElementById("compare-pick-submit");
  var answer = document.getElementById("pick-error");  // the server's "pick exactly two"
  var MOST = 2;
  // Ticked rows, oldest first: those ticked when the page opened in board order.
  var order = boxes.filter(function (box) { return box.checked; });

  function named(box) { return box.getAttribute("data-model") + " (#" + box.value + ")"; }

  function listed(picked) {
    var names = picked.map(named);
    if (names.length < 2) { return names.join(""); }
    return names.slice(0, -1).join(", ") + " and " + names[names.length - 1];
  }

  function describe() {
    var n = order.length;
    if (n === 0) { return "No row picked."; }
    if (n === 1) { return "Picked: " + listed(order) + ". Tick one more row to compare."; }
    if (n === MOST) { return "Picked: " + listed(order) + "."; }
    return "Picked: " + listed(order) + ". Untick " + (n - MOST) + " to compare.";
  }

  function padBottom() {
    // 0 while the stylesheet hides the bar (nothing ticked)
    var height = form.offsetHeight;
    document.documentElement.style.scrollPaddingBottom = height ? (height + 8) + "px" : "";
  }

  function show(note) {
    status.textContent = describe();
    submit.hidden = order.length !== MOST;
    padBottom();
    if (note !== undefined) { live.textContent = (note ? note + " " : "") + describe(); }
  }

  boxes.forEach(function (box) {
    box.addEventListener("change", function () {
      var dropped = [];
      order = order.filter(function (other) { return other !== box; });
      if (box.checked) {
        order.push(box);
        while (order.length > MOST) {
          var oldest = order.shift();
          oldest.checked = false;
          dropped.push(oldest);
        }
      }
      if (answer) { answer.hidden = true; }  // it spoke of the ticks before this change
      show(dropped.length ? "Unticked " + listed(dropped) + ": two rows at most." : "");
    });
  });
  window.addEventListener("resize", padBottom);
  // Back to the page from the comparison: the browser may restore the ticks after this ran.
  window.addEventListener("pageshow", function () {
    order = order.filter(function (box) { return box.checked; }).concat(
      boxes.filter(function (box) { return box.checked && order.indexOf(box) < 0; }));
    show();
  });
  show();
})();
