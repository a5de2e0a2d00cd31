// The viewer's script (served as a static file; the pages carry no inline script): highlights a
// block's box and text together while either is hovered, and moves between pages by key: j or the
// right arrow for the next page, k or the left arrow for the previous one, n for the next page that
// needs review. The links it follows are the page's own (rel="next", rel="prev", #next-flagged).
'use strict';

function blockElements(id) {
  return document.querySelectorAll(`[data-block="${CSS.escape(id)}"]`);
}

function setHighlight(event, on) {
  const element = event.target instanceof Element ? event.target.closest('[data-block]') : null;
  if (element === null) return;
  for (const each of blockElements(element.getAttribute('data-block'))) each.classList.toggle('highlight', on);
}

document.addEventListener('mouseover', (event) => setHighlight(event, true));
document.addEventListener('mouseout', (event) => setHighlight(event, false));

const KEY_LINKS = { j: 'a[rel="next"]', ArrowRight: 'a[rel="next"]', k: 'a[rel="prev"]', ArrowLeft: 'a[rel="prev"]', n: 'a#next-flagged' };

document.addEventListener('keydown', (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey || event.target.closest?.('input, textarea, select')) return;
  const selector = KEY_LINKS[event.key];
  const link = selector === undefined ? null : document.querySelector(selector);
  if (link === null) return;
  event.preventDefault();
  window.location.assign(link.href);
});
