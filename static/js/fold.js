// Folded on a phone, open on a wider screen: every <details data-fold> (the main menu, the list filters). The
// page sends the menu open, so it works without this script; a fold with data-fold-open (a filter is active)
// stays open on a phone too. Loaded right after the menu, so the menu is folded before the page is first
// drawn; the folds further down the page are set once it has been read. No inline script (CSP).
(function () {
  "use strict";

  var narrow = window.matchMedia("(max-width: 40rem)");

  function fold(details) {
    details.open = !narrow.matches || details.hasAttribute("data-fold-open");
  }

  function foldNew() {
    var all = document.querySelectorAll("details[data-fold]:not([data-fold-set])");
    for (var i = 0; i < all.length; i++) {
      fold(all[i]);
      all[i].setAttribute("data-fold-set", "");
    }
  }

  foldNew();
  document.addEventListener("DOMContentLoaded", foldNew);
  narrow.addEventListener("change", function () {
    var all = document.querySelectorAll("details[data-fold]");
    for (var i = 0; i < all.length; i++) {
      fold(all[i]);
    }
  });
})();
