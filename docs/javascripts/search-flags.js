// Search for a flag as written: `--speed` finds the pages that name `--speed`. The search runs on lunr, whose query
// syntax reads a leading "-" as "without this word", so "--speed" was an invalid query and found nothing. Material
// posts each query to its search worker as {type: 2, data: query} (it has no hook for it since Material 9): the
// dashes that start a word are dropped there, as the index drops them (mkdocs.yml's search separator splits at
// "-"), so `--speed` is looked up as `speed`. A single "-" before a word keeps its meaning ("without").
(() => {
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (message, ...rest) {
    if (message && message.type === 2 && typeof message.data === "string") {
      message = { ...message, data: message.data.replace(/(^|\s)-{2,}(?=\S)/g, "$1") };
    }
    return post.call(this, message, ...rest);
  };
})();
