import onnxProto from 'onnx-proto';
import { LAYER_NORM_EPS, type NamedWeight, outputMask, type PolicyConfig } from '../policy/config.ts';

const { onnx } = onnxProto;
const FLOAT = 1;
const INT32 = 6;
const INT64 = 7;
/** The opset the graph is written for (LayerNormalization needs 17). */
export const ONNX_OPSET = 17;

/**
 * Writes the policy as an ONNX graph (opset 17) with the weights as initializers.
 *
 * Inputs: `tokens` int32 [batch, time] (dynamic axes) and `rows` int64 [n], flat indices
 * `b·time + t` of the positions whose logits are wanted. Output: `logits` float [n, vocab].
 * Computing the head only at the requested rows keeps sampling cheap (one row per sequence).
 */
export function exportOnnx(options: { config: PolicyConfig; weights: NamedWeight[] }): Uint8Array {
  const { config, weights } = options;
  const { dModel: d, heads, vocabSize: v, contextLength: tmax } = config;
  const dh = d / heads;
  const w = new Map(weights.map((x) => [x.name, x]));
  const initializers: onnxProto.onnx.ITensorProto[] = [];
  const nodes: onnxProto.onnx.INodeProto[] = [];
  let counter = 0;
  const fresh = (base: string) => `${base}_${counter++}`;

  const floatInit = (name: string, shape: number[], data: Float32Array) => {
    initializers.push({
      name,
      dims: shape,
      dataType: FLOAT,
      rawData: new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength)),
    });
    return name;
  };
  const int64Init = (name: string, shape: number[], data: number[]) => {
    initializers.push({ name, dims: shape, dataType: INT64, int64Data: data });
    return name;
  };
  const weight = (name: string) => {
    const x = w.get(name);
    if (!x) throw new TypeError(`exportOnnx: missing weight ${name}`);
    return floatInit(name, x.shape, x.data);
  };
  const node = (opType: string, inputs: string[], attrs: onnxProto.onnx.IAttributeProto[] = [], outputs = 1): string[] => {
    const outs = Array.from({ length: outputs }, () => fresh(opType.toLowerCase()));
    nodes.push({ opType, input: inputs, output: outs, name: fresh(`n_${opType}`), attribute: attrs });
    return outs;
  };
  const one = (opType: string, inputs: string[], attrs: onnxProto.onnx.IAttributeProto[] = []) =>
    node(opType, inputs, attrs)[0] as string;
  const intAttr = (name: string, i: number) => ({ name, type: onnx.AttributeProto.AttributeType.INT, i });
  const floatAttr = (name: string, f: number) => ({ name, type: onnx.AttributeProto.AttributeType.FLOAT, f });
  const intsAttr = (name: string, ints: number[]) => ({ name, type: onnx.AttributeProto.AttributeType.INTS, ints });
  const ln = (x: string, prefix: string) =>
    one(
      'LayerNormalization',
      [x, weight(`${prefix}.g`), weight(`${prefix}.b`)],
      [intAttr('axis', -1), floatAttr('epsilon', LAYER_NORM_EPS)],
    );
  const linear = (x: string, prefix: string) => one('Add', [one('MatMul', [x, weight(`${prefix}.w`)]), weight(`${prefix}.b`)]);

  // Positions and the causal mask, sized by the input's time axis.
  const shape = one('Shape', ['tokens']);
  const tVec = one('Slice', [shape, int64Init('c_1v', [1], [1]), int64Init('c_2v', [1], [2])]);
  const tScalar = one('Squeeze', [tVec, int64Init('c_axes0', [1], [0])]);
  const positions = one('Range', [int64Init('c_zero', [], [0]), tScalar, int64Init('c_one', [], [1])]);
  const causalData = new Float32Array(tmax * tmax);
  for (let i = 0; i < tmax; i++) for (let j = i + 1; j < tmax; j++) causalData[i * tmax + j] = -1e9;
  const causal = one('Slice', [
    floatInit('causal', [tmax, tmax], causalData),
    int64Init('c_00', [2], [0, 0]),
    one('Concat', [tVec, tVec], [intAttr('axis', 0)]),
  ]);

  let x = one('Add', [
    one('Gather', [weight('tok_emb'), 'tokens'], [intAttr('axis', 0)]),
    one('Gather', [weight('pos_emb'), positions], [intAttr('axis', 0)]),
  ]);
  const headShape = int64Init('c_heads', [4], [0, 0, heads, dh]);
  const mergeShape = int64Init('c_merge', [3], [0, 0, d]);
  const splitSizes = int64Init('c_split', [3], [d, d, d]);
  const scale = floatInit('c_scale', [], new Float32Array([1 / Math.sqrt(dh)]));
  for (let l = 0; l < config.layers; l++) {
    const h = ln(x, `l${l}.ln1`);
    const qkv = linear(h, `l${l}.qkv`);
    const [q, k, vv] = node('Split', [qkv, splitSizes], [intAttr('axis', 2)], 3) as [string, string, string];
    const qh = one('Transpose', [one('Reshape', [q, headShape])], [intsAttr('perm', [0, 2, 1, 3])]);
    const kh = one('Transpose', [one('Reshape', [k, headShape])], [intsAttr('perm', [0, 2, 3, 1])]);
    const vh = one('Transpose', [one('Reshape', [vv, headShape])], [intsAttr('perm', [0, 2, 1, 3])]);
    const scores = one('Add', [one('Mul', [one('MatMul', [qh, kh]), scale]), causal]);
    const att = one('MatMul', [one('Softmax', [scores], [intAttr('axis', -1)]), vh]);
    const merged = one('Reshape', [one('Transpose', [att], [intsAttr('perm', [0, 2, 1, 3])]), mergeShape]);
    x = one('Add', [x, linear(merged, `l${l}.proj`)]);
    const h2 = ln(x, `l${l}.ln2`);
    x = one('Add', [x, linear(one('Relu', [linear(h2, `l${l}.fc1`)]), `l${l}.fc2`)]);
  }
  const flat = one('Reshape', [x, int64Init('c_flat', [2], [-1, d])]);
  const picked = one('Gather', [flat, 'rows'], [intAttr('axis', 0)]);
  const hf = ln(picked, 'lnf');
  const headB = w.get('head.b');
  if (!headB) throw new TypeError('exportOnnx: missing weight head.b');
  const mask = outputMask(config);
  const biased = headB.data.map((b, i) => b + (mask[i] as number));
  const logits = one('Add', [one('MatMul', [hf, weight('head.w')]), floatInit('head.b+mask', [v], biased)]);
  nodes.push({ opType: 'Identity', input: [logits], output: ['logits'], name: 'out' });

  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'troupe',
    opsetImport: [{ domain: '', version: ONNX_OPSET }],
    graph: {
      name: 'policy',
      node: nodes,
      initializer: initializers,
      input: [
        {
          name: 'tokens',
          type: { tensorType: { elemType: INT32, shape: { dim: [{ dimParam: 'batch' }, { dimParam: 'time' }] } } },
        },
        { name: 'rows', type: { tensorType: { elemType: INT64, shape: { dim: [{ dimParam: 'n' }] } } } },
      ],
      output: [
        { name: 'logits', type: { tensorType: { elemType: FLOAT, shape: { dim: [{ dimParam: 'n' }, { dimValue: v }] } } } },
      ],
    },
  });
  return onnx.ModelProto.encode(model).finish();
}
