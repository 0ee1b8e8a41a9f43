#!/usr/bin/env bash
# Keeps the core's shape (docs/architecture.md) from eroding:
#   1. only core/runtime/backend_calls.c calls through a plugin's vtable;
#   2. the core's layers include downwards only:
#        runtime <- tensor <- ops <- autograd <- nn
#      a file in one layer folder includes headers of its own layer or of the
#      layers before it in that list, never of a later one;
#   3. no file sits directly in core/ (every source belongs to a layer).
# Prints every violation and exits 1 when there is one.
set -u
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$root/core" || { echo "no core/ under $root"; exit 1; }
layers=(runtime tensor ops autograd nn)
rank() { local i; for i in "${!layers[@]}"; do [[ ${layers[$i]} == "$1" ]] && { echo "$i"; return; }; done; echo -1; }
bad=0

vt_files=$(grep -rl 'vt->' --include='*.c' --include='*.h' . | sort)
if [[ "$vt_files" != "./runtime/backend_calls.c" ]]; then
  echo "vtable calls outside core/runtime/backend_calls.c:"; grep -rn 'vt->' --include='*.c' --include='*.h' . | grep -v '^./runtime/backend_calls.c'
  bad=1
fi

for f in *; do
  [[ -f $f && $f != CMakeLists.txt ]] && { echo "core/$f is in no layer folder"; bad=1; }
done

for f in */*.c */*.h; do
  layer=${f%%/*}
  me=$(rank "$layer")
  [[ $me -lt 0 ]] && { echo "core/$f: folder '$layer' is not a layer (${layers[*]})"; bad=1; continue; }
  while IFS= read -r inc; do
    target=${inc%%/*}
    if [[ $inc != */* ]]; then
      [[ -f $layer/$inc ]] && continue
      echo "core/$f includes \"$inc\", which is not in its folder; name it as \"layer/file.h\""; bad=1; continue
    fi
    them=$(rank "$target")
    if [[ $them -lt 0 ]]; then echo "core/$f includes \"$inc\" from no layer"; bad=1
    elif [[ $them -gt $me ]]; then echo "core/$f ($layer) includes \"$inc\" from the later layer $target"; bad=1
    fi
  done < <(grep -o '^#include "[^"]*"' "$f" | sed 's/#include "\(.*\)"/\1/' | grep -v '^portable/')
done
[[ $bad -eq 0 ]] && echo "core layers: ok (${layers[*]}; vtable calls only in runtime/backend_calls.c)"
exit $bad
