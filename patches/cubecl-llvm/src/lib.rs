//! Stand-in for `cubecl-llvm 0.11.3` that contains no LLVM.
//!
//! `cubecl-cuda 0.11.3` depends on `cubecl-llvm` unconditionally and compiles both of its kernel
//! backends, CUDA C++ through NVRTC and pliron/LLVM to PTX; its `cpp` feature only chooses which
//! one runs. The published `cubecl-llvm` downloads a prebuilt LLVM in its build script, so it
//! cannot be built offline. This package offers, at the same paths, exactly the names
//! `cubecl-cuda`'s sources use, so that `cubecl-cuda` builds with the `cpp` feature on:
//!
//! - [`nvptx::ptx_version::PtxVersion`], with the published crate's driver table;
//! - [`shared::lowered_features::GpuTarget`] and [`shared::lowered_features::restrict_features`];
//! - [`LlvmTarget`], [`PlironCompiler`], [`PlironOptions`], [`PlironArtifact`], [`NvptxModule`].
//!
//! Nothing here compiles a kernel: [`PlironCompiler`]'s `compile` always returns
//! [`CompilationError::Generic`] saying so. With `cpp` on, `cubecl-cuda` never calls it; a
//! build that forgets `cpp` fails at its first kernel with that message rather than running
//! something else. Nothing here panics.
//!
//! Only `cubecl-cuda` is served. `cubecl-cpu` and `cubecl-hip` also depend on `cubecl-llvm`
//! and use names this package does not have, so they do not build against it.

use cubecl_core::ir::amd::GfxArch;
use cubecl_core::ir::nvidia::SmArch;
use cubecl_environment::backtrace::BackTrace;
use cubecl_runtime::compiler::{CompilationError, Compiler};
use cubecl_runtime::kernel::{BufferIOAttr, KernelDefinition};

pub mod nvptx {
    //! The NVPTX target's names that `cubecl-cuda` uses.

    pub mod ptx_version {
        //! The PTX ISA version the LLVM backend would emit for the installed driver.
        //!
        //! `cubecl-cuda` reads it in every build, whichever backend runs: its runtime stores
        //! `PtxVersion::for_driver(driver_version)` in its compilation options, and its context
        //! puts the version into the LLVM backend's compilation-cache namespace. The logic and
        //! table are the published crate's, so the values, and the namespaces they produce,
        //! are the same as with the real backend.

        use core::fmt;

        /// A PTX ISA version, as the NVPTX target feature spells it: 8.7 is `87`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct PtxVersion(u32);

        impl PtxVersion {
            /// The newest version a driver of CUDA `driver` loads, as `cuDriverGetVersion`
            /// reports it (12.8 is `12080`). `None` below CUDA 10.0.
            pub fn for_driver(driver: i32) -> Option<Self> {
                DRIVER_PTX.iter().find(|(first_driver, _)| driver >= *first_driver).map(|(_, ptx)| Self(*ptx))
            }
        }

        /// `ptx87` for 8.7: the published crate's spelling, which `cubecl-cuda` writes into
        /// cache namespaces.
        impl fmt::Display for PtxVersion {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "ptx{}", self.0)
            }
        }

        /// The first CUDA release to load each PTX version, newest first, as clang maps them,
        /// up to 9.3 (the newest the published crate's LLVM emits). Copied from
        /// `cubecl-llvm 0.11.3`, `src/nvptx/ptx_version.rs`.
        const DRIVER_PTX: &[(i32, u32)] = &[
            (13030, 93),
            (13020, 92),
            (13010, 91),
            (13000, 90),
            (12090, 88),
            (12080, 87),
            (12050, 85),
            (12040, 84),
            (12030, 83),
            (12020, 82),
            (12010, 81),
            (12000, 80),
            (11080, 78),
            (11070, 77),
            (11060, 76),
            (11050, 75),
            (11040, 74),
            (11030, 73),
            (11020, 72),
            (11010, 71),
            (11000, 70),
            (10020, 65),
            (10010, 64),
            (10000, 63),
        ];

        #[cfg(test)]
        mod tests {
            use super::*;

            /// The published crate's own cases.
            #[test]
            fn a_driver_gets_the_newest_version_it_loads() {
                assert_eq!(PtxVersion::for_driver(12080), Some(PtxVersion(87)));
                assert_eq!(PtxVersion::for_driver(12060), Some(PtxVersion(85)));
                assert_eq!(PtxVersion::for_driver(13050), Some(PtxVersion(93)));
                assert_eq!(PtxVersion::for_driver(8000), None);
            }

            #[test]
            fn displays_as_the_target_feature_name() {
                assert_eq!(PtxVersion(87).to_string(), "ptx87");
            }
        }
    }
}

pub mod shared {
    //! Names shared by the GPU targets.

    pub mod lowered_features {
        //! Narrowing a device's advertised features to what the LLVM backend lowers.

        use cubecl_core::ir::DeviceProperties;

        /// The GPU target a device's features would be narrowed for.
        ///
        /// `cubecl-cuda` names `GpuTarget::Nvptx` in its runtime setup, in a branch taken only
        /// when the LLVM backend is the selected one (`cpp` off).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum GpuTarget {
            /// NVIDIA GPUs, through PTX.
            Nvptx,
        }

        /// Leaves `props` unchanged.
        ///
        /// The published function takes away what the LLVM backend cannot lower, so that
        /// kernels are not chosen off features it cannot honour. `cubecl-cuda` calls it only
        /// when the LLVM backend is selected, that is without its `cpp` feature, and then every
        /// kernel compilation already fails with [`crate::PlironCompiler`]'s error whatever
        /// the device advertises. With `cpp` on it is never called, and the properties are
        /// the C++ backend's, which is what that backend compiles against. Doing nothing is
        /// therefore sound in both cases.
        pub fn restrict_features(_props: &mut DeviceProperties, _target: GpuTarget) {}
    }
}

/// The target a [`PlironCompiler`] compiles for. `cubecl-cuda` names `LlvmTarget::Nvptx`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LlvmTarget {
    /// The host CPU (the published crate's default).
    #[default]
    Cpu,
    /// NVIDIA GPUs, through PTX.
    Nvptx,
}

/// The LLVM backend's compiler: `cubecl-cuda`'s `CudaCompiler::Llvm` holds one.
///
/// `cubecl-cuda` derives `Clone` and `Debug` over it and calls the [`Compiler`] methods
/// `compile` and `lang_tag` (it imports the same trait, re-exported by `cubecl-server`).
#[derive(Clone, Debug, Default)]
pub struct PlironCompiler {
    /// Which target the kernels would be compiled for.
    pub target: LlvmTarget,
}

/// Options for a [`PlironCompiler`]: the fields `cubecl-cuda` sets when it builds them
/// (the rest of the published struct is CPU-only and is left out).
#[derive(Clone, Debug, Default)]
pub struct PlironOptions {
    /// AMDGPU architecture; `cubecl-cuda` sets `None`.
    pub arch: Option<GfxArch>,
    /// NVPTX architecture, from the device's compute capability.
    pub sm_arch: Option<SmArch>,
    /// PTX version to emit, from [`nvptx::ptx_version::PtxVersion::for_driver`].
    pub ptx_version: Option<nvptx::ptx_version::PtxVersion>,
    /// Whether scalars and static metadata go in the kernel parameter block.
    pub grid_constants: bool,
}

/// A compiled PTX module: what `cubecl-cuda`'s `CudaRepresentation::Llvm` holds and its
/// context loads. Never produced here; the fields are the ones `cubecl-cuda` reads.
#[derive(Clone, Debug)]
pub struct NvptxModule {
    /// NUL-terminated PTX assembly.
    pub ptx: Vec<core::ffi::c_char>,
    /// Kernel entry point symbol.
    pub entrypoint: String,
    /// IR for logging and cache keys.
    pub ir: String,
    /// Shared memory required per launch, in bytes.
    pub shared_memory_size: usize,
    /// Buffer access modes in binding order.
    pub io: Vec<BufferIOAttr>,
}

/// What [`PlironCompiler`] compiles to.
///
/// The published enum has more variants (a CPU JIT engine, an AMDGPU code object), and
/// `cubecl-cuda` matches it with a `_` arm after `NvptxCode`. `#[non_exhaustive]` keeps that arm
/// required outside this crate without inventing a variant.
#[derive(Clone)]
#[non_exhaustive]
pub enum PlironArtifact {
    /// A PTX module.
    NvptxCode(NvptxModule),
}

/// The IR text, as the published crate displays it (the [`Compiler`] trait asks for `Display`).
impl core::fmt::Display for PlironArtifact {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PlironArtifact::NvptxCode(module) => write!(f, "{}", module.ir),
        }
    }
}

impl Compiler for PlironCompiler {
    type Representation = PlironArtifact;
    type CompilationOptions = PlironOptions;

    /// Always fails: this build has no LLVM backend. See the crate documentation.
    fn compile(
        &mut self,
        _kernel: KernelDefinition,
        _compilation_options: &Self::CompilationOptions,
    ) -> Result<Self::Representation, CompilationError> {
        Err(CompilationError::Generic {
            reason: "the LLVM kernel backend is not built into this program: its cubecl-llvm is \
                     a stand-in without LLVM. Enable cubecl-cuda's `cpp` feature, which \
                     compiles CUDA kernels through NVRTC instead."
                .to_string(),
            backtrace: BackTrace::capture(),
        })
    }

    /// The published crate's answer: what each buffer binding does, kept in the module.
    fn buffer_io(repr: &Self::Representation) -> Option<Vec<BufferIOAttr>> {
        match repr {
            PlironArtifact::NvptxCode(module) => Some(module.io.clone()),
        }
    }

    /// The published crate's extensions: `plir` for the CPU, `ll` for GPU targets.
    fn extension(&self) -> &'static str {
        match self.target {
            LlvmTarget::Cpu => "plir",
            LlvmTarget::Nvptx => "ll",
        }
    }

    /// The published crate's language tags, which `cubecl-cuda` forwards as its own when the
    /// LLVM backend is selected: `mlir` for the CPU, `llvm` for GPU targets.
    fn lang_tag(&self) -> &'static str {
        match self.target {
            LlvmTarget::Cpu => "mlir",
            LlvmTarget::Nvptx => "llvm",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nvptx_target_speaks_llvm() {
        let compiler = PlironCompiler { target: LlvmTarget::Nvptx };
        assert_eq!(compiler.lang_tag(), "llvm");
        assert_eq!(compiler.extension(), "ll");
    }
}
