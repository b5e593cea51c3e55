//! The default device and how to describe it in a plan contract.
use blaze_ir::plan::DeviceInfo;
use burn::tensor::Device;
use std::sync::OnceLock;

/// The default device: CUDA device 0 in a build with Burn's CUDA backend (feature `cuda`),
/// otherwise the default wgpu device, pinned to Vulkan where the build has SPIR-V (feature
/// `vulkan`).
pub fn default_device() -> Device {
    #[cfg(feature = "cuda")]
    {
        Device::cuda(0)
    }
    #[cfg(all(feature = "vulkan", not(feature = "cuda")))]
    {
        Device::vulkan(burn::tensor::DeviceKind::DefaultDevice)
    }
    #[cfg(not(any(feature = "vulkan", feature = "cuda")))]
    {
        Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)
    }
}

/// The graphics API a wgpu device is pinned to: Vulkan with SPIR-V, otherwise wgpu's choice.
pub(crate) fn default_backend() -> burn::backend::wgpu::WgpuBackend {
    use burn::backend::wgpu::WgpuBackend;
    if cfg!(feature = "vulkan") { WgpuBackend::Vulkan } else { WgpuBackend::Auto }
}

/// Kernel compiler of this build, recorded in every plan contract so that a plan made with one
/// never applies under another: `cuda` (feature `cuda`: CUDA C++ through NVRTC), `spirv`
/// (feature `vulkan`, real GPUs) or `wgsl` (lavapipe).
pub const COMPILER: &str = if cfg!(feature = "cuda") {
    "cuda"
} else if cfg!(feature = "vulkan") {
    "spirv"
} else {
    "wgsl"
};

/// The device [`default_device`] runs on: the CUDA device's name (feature `cuda`), or the
/// adapter wgpu picks by default (the same high-performance request CubeCL makes).
pub fn device_info() -> DeviceInfo {
    static INFO: OnceLock<DeviceInfo> = OnceLock::new();
    INFO.get_or_init(|| {
        #[cfg(feature = "cuda")]
        let info = cuda_info();
        #[cfg(not(feature = "cuda"))]
        let info = wgpu_info();
        if let Some(warning) = backend_warning(&info) {
            eprintln!("{warning}");
        }
        info
    })
    .clone()
}

/// The adapter wgpu picks by default: the same high-performance request CubeCL makes, asked
/// once per process ([`device_info`] and [`device_details`] both describe it).
#[cfg(not(feature = "cuda"))]
fn default_adapter() -> Result<burn::backend::wgpu::wgpu::AdapterInfo, String> {
    use burn::backend::wgpu::wgpu;
    static ADAPTER: OnceLock<Result<wgpu::AdapterInfo, String>> = OnceLock::new();
    ADAPTER
        .get_or_init(|| {
            let instance = wgpu::Instance::default();
            let adapter = pollster_block(instance.request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            }));
            adapter.map(|a| a.get_info()).map_err(|e| e.to_string())
        })
        .clone()
}

#[cfg(not(feature = "cuda"))]
fn wgpu_info() -> DeviceInfo {
    match default_adapter() {
        Ok(info) => DeviceInfo {
            adapter: info.name,
            backend: format!("{:?}", info.backend).to_lowercase(),
            compiler: COMPILER.into(),
        },
        Err(e) => {
            DeviceInfo { adapter: format!("unavailable: {e}"), backend: "none".into(), compiler: COMPILER.into() }
        }
    }
}

/// CUDA device 0 as CubeCL's CUDA runtime names it (the driver's device name). A machine
/// without a CUDA driver or device gets `unavailable: ...` and backend `none`, as wgpu's does.
#[cfg(feature = "cuda")]
fn cuda_info() -> DeviceInfo {
    let unavailable = |why: String| DeviceInfo {
        adapter: format!("unavailable: {why}"),
        backend: "none".into(),
        compiler: COMPILER.into(),
    };
    // cudarc loads libcuda on first use and panics when it is missing: ask under a catch so a
    // machine without the driver gets a description, not a crash.
    let client = match std::panic::catch_unwind(|| cubecl::Device::cuda(0).map(|d| d.client())) {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => return unavailable(format!("{e:?}")),
        Err(_) => return unavailable("no CUDA driver (libcuda) could be loaded".into()),
    };
    let name = client.properties().identity.name.clone();
    DeviceInfo { adapter: name, backend: "cuda".into(), compiler: COMPILER.into() }
}

/// The device [`default_device`] runs on, for a person reading a log or a results file: for
/// CUDA the device's name, compute capability, the driver's CUDA version and NVRTC's version;
/// for wgpu the adapter, its API and its driver. Not part of a plan contract (a driver update
/// does not make a plan mean something else; the contract's [`device_info`] keys it).
pub fn device_details() -> String {
    #[cfg(feature = "cuda")]
    {
        cuda_details()
    }
    #[cfg(not(feature = "cuda"))]
    {
        wgpu_details()
    }
}

#[cfg(feature = "cuda")]
fn cuda_details() -> String {
    use cudarc::driver::{result, sys};
    let info = device_info();
    if info.backend != "cuda" {
        return format!("{} (cuda)", info.adapter);
    }
    let version = |v: i32| format!("{}.{}", v / 1000, (v % 1000) / 10);
    // The driver and NVRTC are loaded already (device_info brought the device up); each query
    // that fails says so in place of its value.
    let capability = result::init().and_then(|()| result::device::get(0)).and_then(|dev| {
        use sys::CUdevice_attribute::*;
        // SAFETY: `dev` was returned by cuDeviceGet.
        unsafe {
            let major = result::device::get_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
            let minor = result::device::get_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
            Ok(format!("{major}.{minor}"))
        }
    });
    let capability = capability.unwrap_or_else(|e| format!("unknown ({e:?})"));
    let mut driver = 0;
    // SAFETY: cuDriverGetVersion writes one int through a valid pointer.
    let driver = match unsafe { sys::cuDriverGetVersion(&mut driver) } {
        sys::CUresult::CUDA_SUCCESS => version(driver),
        e => format!("unknown ({e:?})"),
    };
    let (mut major, mut minor) = (0, 0);
    // SAFETY: nvrtcVersion writes two ints through valid pointers.
    let nvrtc = match unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) } {
        cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS => format!("{major}.{minor}"),
        e => format!("unknown ({e:?})"),
    };
    format!("{} (cuda), compute capability {capability}, driver CUDA {driver}, NVRTC {nvrtc}", info.adapter)
}

#[cfg(not(feature = "cuda"))]
fn wgpu_details() -> String {
    match default_adapter() {
        Ok(i) => {
            format!("{} ({:?}), driver {} {}", i.name, i.backend, i.driver, i.driver_info).to_lowercase().trim().into()
        }
        Err(e) => format!("unavailable: {e}"),
    }
}

/// The one warning for a device wgpu reaches through OpenGL: on a machine with no Vulkan
/// driver wgpu falls back to GL (Mesa's llvmpipe on a machine without a GPU), where no plan
/// made on Vulkan or Metal applies, and where a fused matmul's first autotune was seen to wait
/// forever (lavapipe machine without its Vulkan driver, 2026-12-06: wgpu-hal gave up minutes
/// later with "Could not lock adapter context").
pub fn backend_warning(device: &DeviceInfo) -> Option<String> {
    (device.backend == "gl").then(|| {
        format!(
            "warning: blaze: wgpu found no Vulkan or Metal adapter and runs on OpenGL ({}): no plan applies there, \
             and Burn's fused kernels have been seen to hang on it; install a Vulkan driver (without a GPU: \
             lavapipe, `apt-get install mesa-vulkan-drivers`)",
            device.adapter
        )
    })
}

/// Minimal executor for wgpu's adapter request (no async runtime in this crate).
#[cfg(not(feature = "cuda"))]
fn pollster_block<F: std::future::Future>(fut: F) -> F::Output {
    use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
    fn noop(_: *const ()) {}
    fn clone(p: *const ()) -> RawWaker {
        RawWaker::new(p, &VTABLE)
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    let waker = unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) };
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

/// Test only: the wgpu device under the default device, kept by
/// [`keep_device_for_fault_injection`] so [`lose_device`] can destroy it.
static LOSABLE: OnceLock<burn::tensor::wgpu::wgpu::Device> = OnceLock::new();

/// Test only (`blazec tune --inject-device-lost`): brings the default device up through Burn's
/// own setup call and keeps its wgpu handle, so that [`lose_device`] can later take the device
/// away as a driver reset would. Must run before the default device's first use; the runtime
/// options are Burn's defaults (CUBECL_WGPU_MAX_TASKS still applies).
pub fn keep_device_for_fault_injection() -> Result<(), String> {
    let api = default_backend();
    let (_device, setup) = Device::wgpu_options().graphics_api(api).init_with_setup().map_err(|e| format!("{e:?}"))?;
    let _ = LOSABLE.set(setup.device);
    Ok(())
}

/// Test only: destroys the device kept by [`keep_device_for_fault_injection`] (every later
/// use of it fails as on a lost device). False when none was kept.
pub fn lose_device() -> bool {
    LOSABLE.get().map(|device| device.destroy()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(backend: &str) -> DeviceInfo {
        DeviceInfo {
            adapter: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
            backend: backend.into(),
            compiler: COMPILER.into(),
        }
    }

    #[test]
    fn only_an_opengl_adapter_is_warned_about() {
        let warning = backend_warning(&on("gl")).expect("GL is warned about");
        assert!(warning.starts_with("warning: blaze: "), "{warning}");
        assert!(warning.contains("OpenGL (llvmpipe (LLVM 15.0.6, 256 bits))"), "{warning}");
        assert!(warning.contains("mesa-vulkan-drivers"), "{warning}");
        for backend in ["vulkan", "metal", "dx12", "none"] {
            assert_eq!(backend_warning(&on(backend)), None, "{backend}");
        }
    }
}
