#!/usr/bin/env bash
# Keeps the core's shape (docs/architecture.md) from eroding:
#   1. only core/runtime/backend_calls.c calls through a plugin's vtable;
#   2. the core's layers include downwards only:
#        runtime <- tensor <- ops <- autograd <- nn
#      a file in one layer folder includes headers of its own layer or of the
#      layers before it in that list, never of a later one; the public
#      headers (portable/*.h) belong to layers too (public_layer below), and
#      the umbrella portable/portable.h is included nowhere in the core;
#   3. no file sits directly in core/ (every source belongs to a layer);
#   4. calls go downwards only, read from the object files' symbol tables
#      (nm), so no declaration trick gets round it: every symbol an object
#      of one layer leaves undefined and another core object defines is
#      defined in its own layer or an earlier one. Needs the built objects:
#      pass the folder holding <layer>/<file>.o as the second argument
#      (ctest passes the portable target's); without it this check is
#      skipped and says so;
#   5. the core names no backend: no string literal of core/*.c contains
#      "cuda" or "opencl" (comments may; a backend is a plugin the
#      registry finds, described by its own vtable).
# Usage: check_core_layers.sh [repository root] [core object folder]
# Prints every violation and exits 1 when there is one.
set -u
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
objdir="${2:-}"
[[ -n $objdir && -d $objdir ]] && objdir=$(cd "$objdir" && pwd)
cd "$root/core" || { echo "no core/ under $root"; exit 1; }
layers=(runtime tensor ops autograd nn)
declare -A layer_rank=()
for i in "${!layers[@]}"; do layer_rank[${layers[$i]}]=$i; done
rank() { echo "${layer_rank[$1]:--1}"; }
# The layer whose functions a public header declares (its types and
# constants are free to use from that layer up). "none": no core file
# includes it (the umbrella, and libportable-dist's header).
public_layer() {
  case "$1" in
    backend.h|device.h|env.h|export.h|graph.h|half.h|log.h|numeric_rules.h|op_table.h|philox.h|status.h|trace.h|types.h|version.h) echo runtime ;;
    tensor.h|dlpack.h) echo tensor ;;
    ops.h) echo ops ;;
    autograd.h) echo autograd ;;
    nn.h) echo nn ;;
    *) echo none ;;
  esac
}
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
    if [[ $inc == portable/* ]]; then
      pub=${inc#portable/}
      owner=$(public_layer "$pub")
      if [[ $owner == none ]]; then
        echo "core/$f includes \"$inc\", which the core never includes (include the layer's own header)"; bad=1
      elif [[ $(rank "$owner") -gt $me ]]; then
        echo "core/$f ($layer) includes \"$inc\", the public header of the later layer $owner"; bad=1
      fi
      continue
    fi
    target=${inc%%/*}
    if [[ $inc != */* ]]; then
      [[ -f $layer/$inc ]] && continue
      echo "core/$f includes \"$inc\", which is not in its folder; name it as \"layer/file.h\""; bad=1; continue
    fi
    them=$(rank "$target")
    if [[ $them -lt 0 ]]; then echo "core/$f includes \"$inc\" from no layer"; bad=1
    elif [[ $them -gt $me ]]; then echo "core/$f ($layer) includes \"$inc\" from the later layer $target"; bad=1
    fi
  done < <(grep -o '^#include "[^"]*"' "$f" | sed 's/#include "\(.*\)"/\1/')
done

# ---- 4. calls, from the symbol tables ----
calls="calls not checked (no object folder given)"
if [[ -n $objdir ]]; then
  if ! command -v nm >/dev/null; then
    echo "nm not found: cannot check the core's calls"; bad=1
  else
    mapfile -t objs < <(cd "$objdir" 2>/dev/null && find . -name '*.o' | sed 's|^\./||' | sort)
    if [[ ${#objs[@]} -eq 0 ]]; then
      echo "no object files under '$objdir': build the portable target first"; bad=1
    else
      declare -A def_layer=()
      for o in "${objs[@]}"; do
        l=${o%%/*}
        [[ -z ${layer_rank[$l]:-} ]] && { echo "$objdir/$o: object of no layer (${layers[*]})"; bad=1; continue; }
        while read -r sym; do def_layer[$sym]=$l; done < <(nm --defined-only -g "$objdir/$o" | awk 'NF == 3 {print $3}')
      done
      for o in "${objs[@]}"; do
        l=${o%%/*}
        me=${layer_rank[$l]:-}
        [[ -z $me ]] && continue
        while read -r sym; do
          owner=${def_layer[$sym]:-}
          [[ -z $owner ]] && continue # libc, libm, a plugin's symbol: outside the core
          if [[ ${layer_rank[$owner]} -gt $me ]]; then
            echo "core/${o%.o} ($l) calls $sym, defined in the later layer $owner"; bad=1
          fi
        done < <(nm -u "$objdir/$o" | awk '{print $NF}')
      done
      calls="calls downwards only (${#objs[@]} objects)"
    fi
  fi
fi

# ---- 5. no backend names in the core's strings ----
# cpp -fpreprocessed drops comments and keeps everything else as written.
for f in */*.c; do
  hits=$(cpp -fpreprocessed -P "$f" 2>/dev/null | grep -oE '"([^"\\]|\\.)*"' | grep -E 'cuda|opencl')
  if [[ -n $hits ]]; then
    echo "core/$f names a backend in a string (the core learns backends from their plugins):"
    echo "$hits" | sed 's/^/  /'; bad=1
  fi
done

[[ $bad -eq 0 ]] && echo "core layers: ok (${layers[*]}; includes and $calls; vtable calls only in runtime/backend_calls.c; no backend names in strings)"
exit $bad
