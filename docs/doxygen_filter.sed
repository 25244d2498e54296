# Doxygen's input filter for include/ (docs/Doxyfile.in): the headers keep plain C
# comments, which Doxygen would skip; this reads them as documentation on the fly.
#  - the comment opening a header documents the file;
1s|^/\*|/** @file\
 *|
#  - a comment opening a line documents what follows it, except the "/* ---- part ----"
#    rulers between a header's parts;
/^[[:space:]]*\/\*[[:space:]]*-/!s|^\([[:space:]]*\)/\*\([^*]\)|\1/**\2|
#  - a comment after a declaration, field or enumerator documents that;
s|\([;,{][[:space:]]*\)/\*\([^*<]\)|\1/**<\2|
#  - usage examples and tables (" *   " lines) stay as they are written: Markdown code
#    blocks, four spaces in.
s|^ \*   | *     |
