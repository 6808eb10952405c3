#!/bin/bash
# Builds a relocatable SGLang 0.5.17 site-packages for the lent H200 machine (Python 3.12, torch 2.11.0+cu130
# there; 0.5.17 is the newest SGLang that requires torch 2.11.0) and splits it into chunks small enough for
# one device call each. Run it here, in the project root:
#   bash scripts/prepare-sglang-h200.sh
# Output (git-ignored through .git/info/exclude): .gpu/sglang/c1 .. cN and .gpu/sglang/run-sglang.sh.
#
# It carries only what neither the H200 image nor the vLLM 0.26.0 carry (../shared/device/prepare-vllm-h200.sh)
# has: both stashes are unpacked there, SGLang's site first on its own PYTHONPATH, so SGLang's pins win and
# vLLM's site supplies the rest (fastapi, uvicorn, pydantic, pyzmq, msgspec, ...) and the bench client.
# The list was read from SGLang's imports at start (the server, scheduler, model runner, Llama/Qwen models,
# the fa3 and triton attention backends), not yet from a boot there: a missing module on the first boot
# goes into EXTRA below, as the vLLM list grew.
set -euo pipefail
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
OUTDIR=.gpu/sglang
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude

# SGLang's own pins where it pins (sglang-0.5.17 METADATA), else what pip resolved on 2026-12-01.
EXTRA=(
  sglang==0.5.17 sglang-kernel==0.4.5 flashinfer_python==0.6.15.post1 transformers==5.12.1 xgrammar==0.2.1
  openai==2.6.1 soundfile==0.13.1
  tokenizers==0.22.2            # transformers 5.12.1 wants <=0.23.0; the image has 0.23.2
  distro==1.9.0 orjson==3.13.0 gguf==0.19.0 zstandard==0.25.0
  # sglang/utils.py imports IPython at module level, and every entry point imports sglang/utils.py
  ipython==9.18.1 ipython_pygments_lexers==1.1.1 jedi==0.20.1 parso==0.8.7 matplotlib-inline==0.2.2
  traitlets==5.16.1 pexpect==4.9.0 ptyprocess==0.7.0 prompt_toolkit==3.0.53 wcwidth==0.9.4 stack_data==0.6.3
  asttokens==3.0.2 executing==2.3.0 pure_eval==0.2.4 decorator==5.3.1
)
P="--python-version 3.12 --implementation cp --only-binary=:all:"
for p in manylinux_2_35_x86_64 manylinux_2_34_x86_64 manylinux_2_31_x86_64 manylinux_2_28_x86_64 manylinux_2_27_x86_64 \
         manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64 linux_x86_64; do
  P="$P --platform $p"
done
pip download -q --no-deps $P -d "$WORK/whl" "${EXTRA[@]}"
pip install -q --no-deps --no-compile $P --target "$WORK/site" "$WORK"/whl/*.whl

# sglang-kernel unpacks to 1.21 GB. The H200 (sm_90) loads sgl_kernel/sm90/common_ops and, for the fa3 attention
# backend (SGLang's default on Hopper, and the FlashAttention 3 vLLM uses there too), flash_ops: both stay.
# sm100/ is Blackwell's; flashmla_ops (MLA models) is imported in a try; infllm_ops loads on first call only.
K="$WORK/site/sgl_kernel"
rm -rf "$K/sm100" "$K"/flashmla_ops.abi3.so "$K"/infllm_ops.*.so "$WORK/site/bin"

mkdir -p "$OUTDIR" && rm -rf "$OUTDIR"/c*
# xz -3: flash_ops is mostly padding, so -3 gets within about 15% of -6 at a tenth of its time.
tar -C "$WORK/site" -cf - . | xz -3 -T0 > "$WORK/site.tar.xz"
split -b 52M -d "$WORK/site.tar.xz" "$WORK/part."
i=1; for f in "$WORK"/part.*; do mkdir -p "$OUTDIR/c$i"; mv "$f" "$OUTDIR/c$i/"; i=$((i+1)); done

cat > "$OUTDIR/run-sglang.sh" <<'RUN'
#!/bin/bash
# On the lent H200 machine: a working SGLang 0.5.17 from the chunks prepare-sglang-h200.sh made, beside the
# vLLM 0.26.0 carry (its site supplies shared packages and `vllm bench serve`, the one bench client).
# The machine keeps its files between calls only while it stays warm (about 30 s), so make the calls back
# to back, the vLLM chunks first (bash .gpu/run-vllm.sh stash, for each of its chunks), then:
#   bash .gpu/sglang/run-sglang.sh stash                                 carry [".gpu/sglang/cK", ".gpu/sglang/run-sglang.sh"]
#   (one call per chunk), then in the last call, with the last chunks of both:
#   source .gpu/run-vllm.sh ready && source .gpu/sglang/run-sglang.sh ready && ...
# After `ready`: `sglang-python` is python3 on SGLang's site, so a target names SGLang's command
# engine_commands: {sglang: [sglang-python, -m, sglang.launch_server]} and redline can ask its version;
# `sglang-server` is the same server, shorter. `vllm bench serve` works as before.
mode=${1:-ready}
STASH=$HOME/sglang-stash SITE=${TMPDIR:-/tmp}/sglang-site VLLM_SITE=${TMPDIR:-/tmp}/vllm-site
mkdir -p $STASH
for f in .gpu/sglang/c*/part.*; do [ -e "$f" ] && cp -n "$f" $STASH/; done
if [ "$mode" = ready ]; then
  if [ ! -d $SITE/sglang ]; then
    mkdir -p $SITE && cat $STASH/part.* | xz -d -T0 | tar -x -C $SITE || { echo "unpack failed: are all chunks stashed? $(ls $STASH)"; return 1 2>/dev/null || exit 1; }
  fi
  [ -d $VLLM_SITE/vllm ] || echo "warning: no vLLM site at $VLLM_SITE: run .gpu/run-vllm.sh ready first (shared packages, the bench client)"
  # SGLang's site first: its pins (transformers 5.12.1, tokenizers 0.22.2, openai 2.6.1) win for the server only.
  printf '#!/bin/sh\nPYTHONPATH=%s:%s exec python3 "$@"\n' $SITE $VLLM_SITE > /usr/local/bin/sglang-python
  printf '#!/bin/sh\nexec sglang-python -m sglang.launch_server "$@"\n' > /usr/local/bin/sglang-server
  chmod +x /usr/local/bin/sglang-python /usr/local/bin/sglang-server
  export HF_HUB_OFFLINE=1 DO_NOT_TRACK=1 PYTHONUNBUFFERED=1
  sglang-python -c 'import importlib.metadata as m; print("sglang version:", m.version("sglang"))'
else
  ls $STASH
fi
RUN
chmod +x "$OUTDIR/run-sglang.sh"
echo "chunks: $(ls -d "$OUTDIR"/c* | wc -l), total: $(du -cb "$OUTDIR"/c*/part.* | tail -1 | cut -f1) bytes"
du -sh "$OUTDIR"/c*
