//! Seeded parameters, drawn when the model is built.
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::Tensor;

/// Initialises every parameter now. Burn's parameters are lazy (drawn on first use), so without
/// this a second instance built before the first steps would draw different weights from the
/// device RNG, and the first step would register the initialisation ops that later steps lack.
/// Seed the device (`device.seed(s)`) before building the model.
pub fn init_params<M: Module>(model: M) -> M {
    struct Touch;
    impl ModuleVisitor for Touch {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let _ = param.val();
        }
    }
    model.visit(&mut Touch);
    model
}

/// Every float parameter's values, in the module's visiting order (reads them back: a sync).
/// What a training run leaves behind, for comparing two runs at their end.
pub fn parameter_values<M: Module>(model: &M) -> Vec<f32> {
    struct Read(Vec<f32>);
    impl ModuleVisitor for Read {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let values = param.val().into_data().convert::<f32>().try_to_vec::<f32>().unwrap_or_default();
            self.0.extend(values);
        }
    }
    let mut read = Read(Vec::new());
    model.visit(&mut read);
    read.0
}

/// `tensor`'s values in a new buffer ([`crate::capture::device_copy`]: a copy kernel, no sync).
pub(crate) fn copy_tensor<const D: usize>(tensor: &Tensor<D>) -> Tensor<D> {
    crate::capture::device_copy(tensor)
}

/// A copy of `model` whose every float parameter is in a new buffer, with the same autodiff
/// settings (captured training's eager copy).
pub(crate) fn copy_parameters<M: Module>(model: &M) -> M {
    struct Copy;
    impl ModuleMapper for Copy {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            map_inner(param, |value| *value = copy_tensor(value))
        }
    }
    model.clone().map(&mut Copy)
}

/// Changes a parameter's inner (non-autodiff) value in place with `change`, as Burn's optimizer
/// updates it, then lifts it back with the parameter's autodiff settings.
pub(crate) fn map_inner<const D: usize>(
    param: Param<Tensor<D>>,
    change: impl FnOnce(&mut Tensor<D>),
) -> Param<Tensor<D>> {
    let (id, tensor, mapper) = param.consume();
    let (require_grad, checkpointing) = (tensor.is_require_grad(), tensor.gradient_checkpointing_strategy());
    let mut value = tensor.inner();
    change(&mut value);
    let mut lifted = Tensor::from_inner(value);
    if let Some(strategy) = checkpointing {
        lifted = lifted.with_gradient_checkpointing_strategy(strategy);
    }
    if require_grad {
        lifted = lifted.require_grad();
    }
    Param::from_mapped_value(id, lifted, mapper)
}
