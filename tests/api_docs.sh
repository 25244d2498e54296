#!/bin/sh
# api_docs: the docs target (Doxygen over include/, docs/Doxyfile.in) runs without a
# warning (WARN_AS_ERROR) and documents every public header, with the headers' own
# comments: a function's, a struct field's and a header's usage example.
# usage: api_docs.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 src=$2
cmake --build "$build" --target docs >"$build/docs-test.log" 2>&1 ||
    { cat "$build/docs-test.log"; echo "FAIL the docs target (Doxygen warned or failed)"; exit 1; }
html=$build/docs/html
[ -f "$html/index.html" ] || { echo "FAIL no $html/index.html"; exit 1; }
for h in "$src"/include/clgrad/*.h; do
    page=$html/$(basename "$h" .h | sed 's/_/__/g')_8h.html   # Doxygen doubles "_" in file names
    [ -f "$page" ] || { echo "FAIL $(basename "$h") has no page ($page)"; exit 1; }
done
# text from the comments, as the filter turned them into documentation
has() {
    grep -qF -- "$2" "$html/$1" || { echo "FAIL $1 lacks \"$2\""; exit 1; }
}
has optim_8h.html "optimizers that update parameters where they live"     # the file's comment
has optim_8h.html "so.lr = 0.05;"                                          # its usage example, as code
has optim_8h.html "lr 1e-2, alpha 0.99, eps 1e-8"                         # a trailing comment
grep -rqF "the longest context" "$html" || { echo "FAIL clg_gpt_config.block_size's comment is missing"; exit 1; }
echo "api docs: $(ls "$html" | wc -l) files in $html, no warnings"
