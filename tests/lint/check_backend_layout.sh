#!/usr/bin/env bash
# Keeps every backend on the one skeleton (docs/backends.md):
#   1. the skeleton's files are there: plugin.c, device.c, memory.c,
#      launch.c, exec.c, errors.c, internal.h, README.md, CMakeLists.txt;
#   2. every source is named by its role: <role>.c or <role>_<topic>.c with
#      role one of plugin (no topic), device, memory, launch, exec, errors;
#      an exec file's topic starts with an op family of op_table.h
#      (exec_<family>.c, exec_<family>_<part>.c); CUDA kernel sources are
#      kernels_<topic>.cu;
#   3. one symbol prefix per backend, stated on a "Symbol prefix: `X`" line
#      of its README.md and "Symbol prefix: X" in its internal.h; every
#      global symbol its objects define starts with it, except
#      pt_backend_entry, which plugin.c defines and nothing else does
#      (plugin.c defines no other: it holds the vtable and the entry only);
#   4. no circle of calls between a plugin's files, read from the objects'
#      symbol tables (nm): an edge a -> b where a.o leaves undefined a
#      symbol b.o defines; the graph must be acyclic. A prefixed symbol that
#      an object needs and none defines (a source left out of the target,
#      which a MODULE links anyway) fails too.
# Checks 3 and 4 need the built objects, found under
# <build>/backends/<name>/CMakeFiles/portable-<name>.dir; a backend that was
# not built gets checks 1 and 2 only, and the output says so.
# Usage: check_backend_layout.sh <repository root> <build folder> <backend>...
# Prints every violation and exits 1 when there is one.
set -u
root="${1:?usage: check_backend_layout.sh <root> <build folder> <backend>...}"
build="${2:?usage: check_backend_layout.sh <root> <build folder> <backend>...}"
shift 2
[[ $# -gt 0 ]] || { echo "no backend named"; exit 1; }
required=(plugin.c device.c memory.c launch.c exec.c errors.c internal.h README.md CMakeLists.txt)
families=$(sed -n '/typedef enum pt_op_family/,/} pt_op_family/s/^ *PT_OP_FAMILY_\([A-Z_]*\).*/\1/p' \
           "$root/include/portable/op_table.h" | tr 'A-Z' 'a-z')
[[ -n $families ]] || { echo "no op families found in include/portable/op_table.h"; exit 1; }
bad=0
summary=()

# A circle in the graph held by the associative array `edges` ("a" -> "b c"),
# printed as "a -> b -> a"; empty when there is none.
find_circle() {
  local -A state=() # 1: on the current path, 2: done
  local -a path=()
  local circle=""
  visit() {
    local n=$1 m
    state[$n]=1; path+=("$n")
    for m in ${edges[$n]:-}; do
      [[ -n $circle ]] && return
      if [[ ${state[$m]:-0} -eq 1 ]]; then
        local i out="" on=0
        for i in "${path[@]}"; do
          [[ $i == "$m" ]] && on=1
          [[ $on -eq 1 ]] && out+="$i -> "
        done
        circle="$out$m"; return
      elif [[ ${state[$m]:-0} -eq 0 ]]; then
        visit "$m"
      fi
    done
    state[$n]=2; unset 'path[${#path[@]}-1]'
  }
  local n
  for n in "${!edges[@]}"; do
    [[ -n $circle ]] && break
    [[ ${state[$n]:-0} -eq 0 ]] && visit "$n"
  done
  echo "$circle"
}

for name in "$@"; do
  dir="$root/backends/$name"
  [[ -d $dir ]] || { echo "backends/$name: no such folder"; bad=1; continue; }
  for f in "${required[@]}"; do
    [[ -f $dir/$f ]] || { echo "backends/$name: the skeleton's $f is missing (docs/backends.md)"; bad=1; }
  done
  for path in "$dir"/*.c "$dir"/*.cu; do
    [[ -f $path ]] || continue
    f=${path##*/}
    if [[ $f == *.cu ]]; then
      [[ $f =~ ^kernels_[a-z0-9_]+\.cu$ ]] || { echo "backends/$name/$f: kernel sources are kernels_<topic>.cu"; bad=1; }
      continue
    fi
    if [[ ! $f =~ ^(plugin|device|memory|launch|exec|errors)(_[a-z0-9_]+)?\.c$ ]] || [[ $f == plugin_* ]]; then
      echo "backends/$name/$f: not named by a role (plugin.c, device*.c, memory*.c, launch*.c, exec*.c, errors*.c)"; bad=1
      continue
    fi
    if [[ $f == exec_* ]]; then
      topic=${f#exec_}; topic=${topic%.c}
      ok=0
      for fam in $families; do [[ $topic == "$fam" || $topic == "$fam"_* ]] && ok=1; done
      [[ $ok -eq 1 ]] || { echo "backends/$name/$f: exec files are exec_<family>[_<part>].c, families: $(echo $families)"; bad=1; }
    fi
  done

  prefix=$(sed -n 's/.*Symbol prefix: `\([A-Za-z0-9_]*\)`.*/\1/p' "$dir/README.md" 2>/dev/null | head -1)
  if [[ -z $prefix ]]; then
    echo "backends/$name/README.md: no 'Symbol prefix: \`X\`' line"; bad=1
  elif ! grep -q "Symbol prefix: $prefix\b" "$dir/internal.h" 2>/dev/null; then
    echo "backends/$name/internal.h: does not state 'Symbol prefix: $prefix' as README.md does"; bad=1
  fi

  objdir="$build/backends/$name/CMakeFiles/portable-$name.dir"
  # Objects of sources that exist (in the folder, or generated into the
  # build's): an old build folder may still hold objects of renamed files.
  objs=()
  for o in $(cd "$objdir" 2>/dev/null && ls *.o 2>/dev/null | sort); do
    [[ -f $dir/${o%.o} || -f $build/backends/$name/${o%.o} ]] && objs+=("$o")
  done
  if [[ ${#objs[@]} -eq 0 ]]; then
    summary+=("$name: files only (not built)")
    continue
  fi
  if ! command -v nm >/dev/null; then echo "nm not found: cannot check the plugins' symbols"; bad=1; break; fi
  declare -A def_file=() edges=()
  for o in "${objs[@]}"; do
    src=${o%.o}
    while read -r sym; do
      [[ -z $sym ]] && continue
      def_file[$sym]=$src
      if [[ $sym == pt_backend_entry ]]; then
        [[ $src == plugin.c ]] || { echo "backends/$name/$src defines pt_backend_entry (only plugin.c may)"; bad=1; }
      elif [[ $src == plugin.c ]]; then
        echo "backends/$name/plugin.c defines $sym: it holds the vtable and the entry point only"; bad=1
      elif [[ -n $prefix && $sym != "$prefix"* ]]; then
        echo "backends/$name/$src defines $sym, which lacks the backend's prefix $prefix"; bad=1
      fi
    # Global symbols with C names: C++ (_Z...) and compiler-made (_...,
    # __...) names of nvcc's objects are not the plugin's own words.
    done < <(nm --defined-only -g "$objdir/$o" | awk 'NF == 3 && $2 != "V" && $2 != "W" && $3 !~ /^_/ {print $3}')
  done
  for o in "${objs[@]}"; do
    src=${o%.o}
    targets=""
    while read -r sym; do
      owner=${def_file[$sym]:-}
      if [[ -z $owner && -n $prefix && $sym == "$prefix"* ]]; then
        echo "backends/$name/$src calls $sym, which no object of the plugin defines (a source missing from CMakeLists.txt?)"; bad=1
      fi
      [[ -z $owner || $owner == "$src" ]] && continue
      [[ " $targets " == *" $owner "* ]] || targets+=" $owner"
    done < <(nm -u "$objdir/$o" | awk '{print $NF}')
    edges[$src]=${targets# }
  done
  circle=$(find_circle)
  if [[ -n $circle ]]; then
    echo "backends/$name: a circle of calls between its files: $circle"; bad=1
  fi
  summary+=("$name: ${#objs[@]} objects, prefix $prefix")
  unset def_file edges
done

[[ $bad -eq 0 ]] && echo "backend layout: ok (skeleton files, role names, one prefix each, no circle of calls; $(printf '%s; ' "${summary[@]}" | sed 's/; $//'))"
exit $bad
