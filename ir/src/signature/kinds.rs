//! An operation's kind from its variants, without formatting: the names its Debug form gives
//! (`super::kind_of_debug`), written out for every variant of Burn 0.22.1's operation enums.
//!
//! Why: the op-stream watch writes a signature line per operation it judges, inside the
//! running program, and reading the kind out of the Debug form cost it about 1 us for each
//! kind met for the first time in a process and 0.2 us for a known one (a per-thread map;
//! cnn-mnist training on the 2-core CI machine, `results/lavapipe/2026-12-05-check-clock/`):
//! a fifth of the check's cost on a small step. A match costs a jump.
//!
//! The names are the variants' own (`stringify!`), so they are what derived Debug writes; the
//! matches have no wildcard arm, so a Burn whose enums gain a variant does not build until it is
//! listed here. The Debug scanner skips dtype names, and `Bool` is one: a bool operation's kind
//! is its inner name alone (`Bool(Not ..)` is `Not`), here too. Where Debug reads otherwise (a
//! dtype that is not one name, such as `QFloat(QuantScheme ..)`), [`names`] answers `None` and
//! the caller reads the Debug form.
use burn_ir::{
    ActivationOperationIr, BaseOperationIr, BoolOperationIr, DistributedOperationIr, FloatOperationIr, IntOperationIr,
    ModuleOperationIr, NumericOperationIr, OperationIr,
};

/// The name of a value's enum variant, as derived Debug writes it.
trait VariantName {
    fn variant_name(&self) -> &'static str;
}

/// Implements [`VariantName`] for each enum from its list of variants, and lists every name
/// (the tests check none is read otherwise by the Debug scanner).
macro_rules! variant_names {
    ($($enum:ident { $($variant:ident)* })*) => {
        $(impl VariantName for $enum {
            fn variant_name(&self) -> &'static str {
                match self {
                    $(Self::$variant { .. } => stringify!($variant),)*
                }
            }
        })*

        #[cfg(test)]
        pub(super) const VARIANTS: &[&str] = &[$($(stringify!($variant),)*)*];
    };
}

variant_names! {
    OperationIr {
        BaseFloat BaseInt BaseBool NumericFloat NumericInt Bool Int Float Module Init Custom Drop
        Distributed Activation
    }
    FloatOperationIr {
        Exp Log Log1p Erf PowfScalar Sqrt Cos Cosh Sin Sinh Tan Tanh ArcCos ArcCosh ArcSin ArcSinh
        ArcTan ArcTanh ArcTan2 Round Floor Ceil Trunc IntoInt Matmul Cross Random Recip IsNan IsInf
        Quantize Dequantize GridSample2d Powf Hypot
    }
    ModuleOperationIr {
        BatchNorm Embedding EmbeddingBackward Linear LinearXBackward LinearWeightBackward
        LinearBiasBackward Conv1d Conv1dXBackward Conv1dWeightBackward Conv1dBiasBackward Conv2d
        Conv2dXBackward Conv2dWeightBackward Conv2dBiasBackward Conv3d Conv3dXBackward
        Conv3dWeightBackward Conv3dBiasBackward DeformableConv2d DeformableConv2dBackward
        ConvTranspose1d ConvTranspose2d ConvTranspose3d AvgPool1d AvgPool2d AvgPool1dBackward
        AvgPool2dBackward AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool1dBackward
        AdaptiveAvgPool2dBackward AdaptiveAvgPool3d AdaptiveAvgPool3dBackward MaxPool1d
        MaxPool1dWithIndices MaxPool1dWithIndicesBackward MaxPool2d MaxPool2dWithIndices
        MaxPool2dWithIndicesBackward Interpolate InterpolateBackward Attention CtcLoss
        CtcLossBackward LayerNorm Unfold4d ConvTranspose1dWeightBackward ConvTranspose1dBiasBackward
        ConvTranspose2dWeightBackward ConvTranspose2dBiasBackward ConvTranspose3dWeightBackward
        ConvTranspose3dBiasBackward
    }
    BaseOperationIr {
        Reshape SwapDims Permute Flip Expand Unfold Slice SliceAssign Select SelectAssign MaskWhere
        MaskFill Gather Scatter ScatterNd GatherNd Equal EqualElem RepeatDim Cat Cast Empty Ones
        Zeros NotEqual NotEqualElem All Any AllDim AnyDim
    }
    NumericOperationIr {
        Add AddScalar Sub SubScalar Div DivScalar Rem RemScalar Mul MulScalar Abs Full MeanDim Mean
        Sum SumDim SumDims Prod ProdDim Greater GreaterElem GreaterEqual GreaterEqualElem Lower
        LowerElem LowerEqual LowerEqualElem ArgMax ArgTopK TopK TopKWithIndices ArgMin Max
        MaxDimWithIndices MinDimWithIndices Min MaxDim MinDim MaxAbs MaxAbsDim Clamp IntRandom Powi
        PowiScalar CumSum CumProd CumMin CumMax Neg Sign ClampMin ClampMax Sort SortWithIndices
        ArgSort Pad
    }
    IntOperationIr {
        IntoFloat BitwiseAnd BitwiseAndScalar BitwiseOr BitwiseOrScalar BitwiseXor BitwiseXorScalar
        BitwiseNot BitwiseLeftShift BitwiseLeftShiftScalar BitwiseRightShift BitwiseRightShiftScalar
        Matmul
    }
    BoolOperationIr { IntoFloat IntoInt Not And Or Xor }
    DistributedOperationIr { AllReduce SyncCollective }
    ActivationOperationIr {
        Relu ReluBackward LeakyRelu PRelu Gelu GeluBackward Sigmoid SigmoidBackward HardSigmoid
        LogSigmoid LogSigmoidBackward Softmax LogSoftmax Softmin
    }
}

/// The outer and inner variant names of `op` (the inner is `None` where the payload is a struct:
/// `Init`, `Custom`, `Drop`), or `None` where the Debug form reads otherwise (see the module docs).
pub(super) fn names(op: &OperationIr) -> Option<(&'static str, Option<&'static str>)> {
    let inner: Option<&dyn VariantName> = match op {
        OperationIr::BaseFloat(i) | OperationIr::BaseInt(i) | OperationIr::BaseBool(i) => Some(i),
        OperationIr::NumericFloat(d, i) | OperationIr::NumericInt(d, i) => one_name(d).then_some(i),
        OperationIr::Float(d, i) => one_name(d).then_some(i),
        // `Bool` is also a dtype's name, which the scanner skips: `Bool(Not(UnaryOpIr ..))`
        // reads as `Not`.
        OperationIr::Bool(i) => return Some((i.variant_name(), None)),
        OperationIr::Int(i) => Some(i),
        OperationIr::Module(i) => Some(i),
        OperationIr::Distributed(i) => Some(i),
        OperationIr::Activation(i) => Some(i),
        OperationIr::Init(_) | OperationIr::Custom(_) | OperationIr::Drop(_) => return Some((op.variant_name(), None)),
    };
    inner.map(|i| (op.variant_name(), Some(i.variant_name())))
}

/// Whether `dtype`'s Debug form is one name the scanner skips (`F32`), not a name with a
/// payload (`QFloat(QuantScheme ..)`, whose payload the scanner would read as the second name).
pub(super) fn one_name<D: std::fmt::Debug + PartialEq + Copy + 'static>(dtype: &D) -> bool {
    super::with_dtype(*dtype, super::is_dtype)
}
