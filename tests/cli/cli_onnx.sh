#!/bin/sh
# cli_onnx: clgrad export and import end to end (a build with ONNX): a trained checkpoint
# exported and imported back has its model file and predicts the same logits; the
# imported checkpoint works
# with info, eval, predict and train (--resume with the model file import writes, and
# --init); PyTorch's exports of a character LSTM and of nanoGPT's GPT import and sample,
# evaluate and train on text, attention among layers on floats predicts PyTorch's
# outputs; a graph with an op import does not read fails with one line naming it.
# Usage: cli_onnx.sh CLGRAD
. "$(dirname "$0")/common.sh"
cd "$T"
D="--data $T/data --steps 3"

ok a train m.json $D --epochs 1 --out a.ckpt
ok x export a.ckpt a.onnx
has x "written as ONNX (opset 17) to a.onnx"
ok i import a.onnx b.ckpt --model b.json
has i "a.onnx: 5 layers, 25450 parameters, saved to b.ckpt, model file b.json"
has i "head         linear"
ok n info b.ckpt
# clgrad's own export comes back whole: the model file (comment, classes, transforms)
has n "comment: CLI test model"
has n "normalize mean/std 0.286/0.353"
ok pa predict a.ckpt x.npy --out ya.npy
ok pb predict b.ckpt x.npy --out yb.npy
"$PY" -c "
import numpy as np, sys
a, b = np.load('ya.npy'), np.load('yb.npy')
print('max |a - b|', float(np.abs(a - b).max()))
sys.exit(0 if a.shape == b.shape and (a == b).all() else 1)" || fail "the imported export predicts other logits"

ok e eval b.ckpt --data "$T/data"
has e "| accuracy "
ok r train b.json $D --epochs 2 --resume b.ckpt --out r.ckpt
has r "resumed from b.ckpt: epoch 1, batch 0, step 0"
has r "checkpoint: r.ckpt"
ok f train b.json $D --epochs 1 --init b.ckpt --freeze 1 --out f.ckpt
has f "frozen: 1"

# a character LSTM exported by PyTorch: imported, it samples, evaluates and trains on text
"$PY" -c "
import warnings, torch
from torch import nn
warnings.simplefilter('ignore')
class Char(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.lstm, self.head = nn.Embedding(256, 16), nn.LSTM(16, 32, 2, batch_first=True), nn.Linear(32, 256)
    def forward(self, x):
        return self.head(self.lstm(self.emb(x))[0])
torch.manual_seed(0)
torch.onnx.export(Char().eval(), torch.zeros(1, 16, dtype=torch.long), 'char.onnx', opset_version=17,
                  input_names=['input'], output_names=['output'], dynamic_axes={'input': {0: 'b'}, 'output': {0: 'b'}})" ||
    fail "PyTorch could not export the character model (python3-torch)"
ok ci import char.onnx char.ckpt --model char.json
has ci "lstm               [16, 32]"
yes 'the quick brown fox jumps over the lazy dog.' | head -c 6000 >text.txt
ok cs sample char.ckpt --prime 'The ' --length 20
# the first 4 windows: the whole 6 KB took a minute on rusticl, and the import is the point
ok ce eval char.ckpt --data text:text.txt --eval-steps 4
has ce "bits per byte"
ok ct train char.json --data text:text.txt --steps 3 --resume char.ckpt --out char2.ckpt
has ct "resumed from char.ckpt"

# PyTorch's GPT (nanoGPT's model with nn.MultiheadAttention) imports as one gpt layer that
# samples, evaluates and trains on text; attention among other layers on floats predicts
# PyTorch's outputs
"$PY" -c "
import sys, warnings, numpy as np, torch
sys.path.insert(0, '$HERE/../io')
from torch_attn import Gpt, SeqNet
warnings.simplefilter('ignore')
torch.manual_seed(0)
for name, m, x in (('gpt', Gpt(False), torch.zeros(1, 16, dtype=torch.long)), ('seq', SeqNet(None), torch.randn(3, 10, 6))):
    torch.onnx.export(m.eval(), x, name + '.onnx', opset_version=17, input_names=['input'], output_names=['output'],
                      dynamic_axes={'input': {0: 'b'}, 'output': {0: 'b'}})
    with torch.no_grad():
        np.save(name + '_x.npy', x.numpy()), np.save(name + '_y.npy', m(x).numpy())" ||
    fail "PyTorch could not export the attention models (python3-torch)"
ok gi import gpt.onnx gpt.ckpt --model gpt.json
has gi "gpt                [16, 256]"
has gi "context=16, layers=2, heads=4, dim=32"
ok gs sample gpt.ckpt --prime 'The ' --length 8
# the first 8 windows, as for the LSTM (the whole text: 22 s of the test's 41 on rusticl)
ok ge eval gpt.ckpt --data text:text.txt --eval-steps 8
has ge "bits per byte"
ok gt train gpt.json --data text:text.txt --steps 3 --resume gpt.ckpt --out gpt2.ckpt
has gt "resumed from gpt.ckpt"
ok si import seq.onnx seq.ckpt
has si "transformer_block  [10, 32]"
ok sp predict seq.ckpt seq_x.npy --out seq_c.npy
"$PY" -c "
import numpy as np, sys
a, b = np.load('seq_c.npy'), np.load('seq_y.npy')
d = float(np.abs(a - b).max() / max(1, np.abs(b).max()))
print('max |clgrad - torch| relative', d)
sys.exit(0 if a.shape == b.shape and d <= 1e-5 else 1)" || fail "the imported attention predicts other logits than PyTorch"

# an op import does not read: one line naming the node and op, no checkpoint
"$PY" -c "
import onnx
from onnx import helper, TensorProto as T
g = helper.make_graph([helper.make_node('LogSoftmax', ['input'], ['output'], name='lsm')], 'g',
    [helper.make_tensor_value_info('input', T.FLOAT, ['batch', 10])], [helper.make_tensor_value_info('output', T.FLOAT, ['batch', 10])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), 'bad.onnx')"
rc=0
"$CLGRAD" import bad.onnx bad.ckpt >bad.out 2>bad.err || rc=$?
[ $rc -ne 0 ] || fail "bad.onnx: imported"
[ "$(wc -l <bad.err)" -eq 1 ] || fail "bad.onnx: want one line on stderr: $(cat bad.err)"
grep -qF 'node "lsm" (LogSoftmax): op LogSoftmax is not supported' bad.err || fail "bad.onnx: $(cat bad.err)"
[ ! -e bad.ckpt ] || fail "bad.onnx: a checkpoint was written"
echo "cli_onnx: passed"
