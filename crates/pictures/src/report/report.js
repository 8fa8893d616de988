// fairshare report: the search over accounts and users. Plain JavaScript, no framework; names
// are untrusted and inserted as text (textContent), never as markup.
"use strict";
(function () {
  var data = document.getElementById("search-index");
  var input = document.getElementById("q");
  var list = document.getElementById("results");
  if (!data || !input || !list) { return; }
  var entries = JSON.parse(data.textContent);
  var MAX = 50;

  function show(query) {
    var q = query.trim().toLowerCase();
    while (list.firstChild) { list.removeChild(list.firstChild); }
    if (!q) { return; }
    var found = 0;
    for (var i = 0; i < entries.length && found < MAX; i++) {
      var e = entries[i];
      if (e[0].toLowerCase().indexOf(q) < 0) { continue; }
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = e[2];
      a.textContent = e[0];
      var kind = document.createElement("span");
      kind.className = "k";
      kind.textContent = e[1];
      li.appendChild(a);
      li.appendChild(kind);
      list.appendChild(li);
      found++;
    }
    if (!found) {
      var none = document.createElement("li");
      none.textContent = "No account or user matches.";
      list.appendChild(none);
    }
  }

  input.addEventListener("input", function () { show(input.value); });
  // `index.html#q=NAME` opens with the search run, for links and tests.
  var m = /^#q=(.*)$/.exec(window.location.hash);
  if (m) {
    input.value = decodeURIComponent(m[1]);
    show(input.value);
  }
})();
