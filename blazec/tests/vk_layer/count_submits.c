/* A Vulkan layer that counts queue submissions: every vkQueueSubmit, vkQueueSubmit2 and
 * vkQueueSubmit2KHR call passes through it to the driver and is counted; at process exit the
 * counts are written to the file named by BLAZE_SUBMIT_COUNT_FILE as
 *   calls <n>\nbatches <m>\n
 * (calls: submissions to a queue; batches: the VkSubmitInfo(2) records they carried).
 *
 * Test-only (compiler/tests/submissions.rs builds it with `cc` and enables it with
 * VK_ADD_LAYER_PATH / VK_INSTANCE_LAYERS in a child blazec). It declares the few Vulkan and
 * loader-interface types it uses itself, so that building it needs no Vulkan headers; the
 * layouts are those of vulkan_core.h and vk_layer.h (loader-layer interface version 2). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t VkResult;
typedef void *VkInstance, *VkPhysicalDevice, *VkDevice, *VkQueue;
typedef uint64_t VkFence;
typedef void (*PFN_vkVoidFunction)(void);
typedef PFN_vkVoidFunction (*PFN_vkGetInstanceProcAddr)(VkInstance, const char *);
typedef PFN_vkVoidFunction (*PFN_vkGetDeviceProcAddr)(VkDevice, const char *);
typedef VkResult (*PFN_vkCreateInstance)(const void *, const void *, VkInstance *);
typedef VkResult (*PFN_vkCreateDevice)(VkPhysicalDevice, const void *, const void *, VkDevice *);
typedef VkResult (*PFN_vkQueueSubmit)(VkQueue, uint32_t, const void *, VkFence);

#define VK_SUCCESS 0
#define VK_ERROR_INITIALIZATION_FAILED (-3)
#define VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO 47
#define VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO 48
#define VK_LAYER_LINK_INFO 0

typedef struct { int32_t sType; const void *pNext; } VkBaseInStructure;
typedef struct InstanceLink { struct InstanceLink *pNext; PFN_vkGetInstanceProcAddr next_gipa; void *next_gpdpa; } InstanceLink;
typedef struct DeviceLink { struct DeviceLink *pNext; PFN_vkGetInstanceProcAddr next_gipa; PFN_vkGetDeviceProcAddr next_gdpa; } DeviceLink;
/* VkLayerInstanceCreateInfo / VkLayerDeviceCreateInfo: the union's first member is the link. */
typedef struct { int32_t sType; const void *pNext; int32_t function; void *link; } LayerCreateInfo;
typedef struct {
  int32_t sType; void *pNext; uint32_t loaderLayerInterfaceVersion;
  PFN_vkGetInstanceProcAddr pfnGetInstanceProcAddr; PFN_vkGetDeviceProcAddr pfnGetDeviceProcAddr; void *pfnGetPhysicalDeviceProcAddr;
} VkNegotiateLayerInterface;

#define EXPORT __attribute__((visibility("default")))

static PFN_vkGetInstanceProcAddr next_gipa;
static PFN_vkGetDeviceProcAddr next_gdpa;
static VkInstance last_instance;
static PFN_vkQueueSubmit next_submit, next_submit2, next_submit2_khr;
static atomic_ulong calls, batches;

static LayerCreateInfo *link_info(const void *chain, int32_t stype) {
  for (const VkBaseInStructure *s = chain; s; s = s->pNext) {
    LayerCreateInfo *info = (LayerCreateInfo *)s;
    if (s->sType == stype && info->function == VK_LAYER_LINK_INFO) return info;
  }
  return NULL;
}

static VkResult count(PFN_vkQueueSubmit next, VkQueue q, uint32_t n, const void *submits, VkFence fence) {
  atomic_fetch_add(&calls, 1);
  atomic_fetch_add(&batches, n);
  return next(q, n, submits, fence);
}
static VkResult QueueSubmit(VkQueue q, uint32_t n, const void *s, VkFence f) { return count(next_submit, q, n, s, f); }
static VkResult QueueSubmit2(VkQueue q, uint32_t n, const void *s, VkFence f) { return count(next_submit2, q, n, s, f); }
static VkResult QueueSubmit2KHR(VkQueue q, uint32_t n, const void *s, VkFence f) { return count(next_submit2_khr, q, n, s, f); }

static VkResult CreateInstance(const void *info, const void *alloc, VkInstance *out) {
  LayerCreateInfo *layer = link_info(((const VkBaseInStructure *)info)->pNext, VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO);
  if (!layer) return VK_ERROR_INITIALIZATION_FAILED;
  InstanceLink *link = layer->link;
  next_gipa = link->next_gipa;
  layer->link = link->pNext; /* the next layer reads its own link */
  PFN_vkCreateInstance create = (PFN_vkCreateInstance)next_gipa(NULL, "vkCreateInstance");
  VkResult r = create(info, alloc, out);
  if (r == VK_SUCCESS) last_instance = *out;
  return r;
}

static VkResult CreateDevice(VkPhysicalDevice gpu, const void *info, const void *alloc, VkDevice *out) {
  LayerCreateInfo *layer = link_info(((const VkBaseInStructure *)info)->pNext, VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO);
  if (!layer) return VK_ERROR_INITIALIZATION_FAILED;
  DeviceLink *link = layer->link;
  PFN_vkGetInstanceProcAddr gipa = link->next_gipa;
  next_gdpa = link->next_gdpa;
  layer->link = link->pNext;
  PFN_vkCreateDevice create = (PFN_vkCreateDevice)gipa(last_instance, "vkCreateDevice");
  VkResult r = create(gpu, info, alloc, out);
  if (r != VK_SUCCESS) return r;
  next_submit = (PFN_vkQueueSubmit)next_gdpa(*out, "vkQueueSubmit");
  next_submit2 = (PFN_vkQueueSubmit)next_gdpa(*out, "vkQueueSubmit2");
  next_submit2_khr = (PFN_vkQueueSubmit)next_gdpa(*out, "vkQueueSubmit2KHR");
  return r;
}

static PFN_vkVoidFunction ours(const char *name);

EXPORT PFN_vkVoidFunction vkGetDeviceProcAddr(VkDevice device, const char *name) {
  if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_vkVoidFunction)vkGetDeviceProcAddr;
  PFN_vkVoidFunction next = next_gdpa(device, name);
  /* a submit entry point the driver lacks stays absent */
  if (next && !strncmp(name, "vkQueueSubmit", 13)) return ours(name);
  return next;
}

EXPORT PFN_vkVoidFunction vkGetInstanceProcAddr(VkInstance instance, const char *name) {
  PFN_vkVoidFunction f = ours(name);
  if (f) return f;
  return next_gipa ? next_gipa(instance, name) : NULL;
}

static PFN_vkVoidFunction ours(const char *name) {
  if (!strcmp(name, "vkGetInstanceProcAddr")) return (PFN_vkVoidFunction)vkGetInstanceProcAddr;
  if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_vkVoidFunction)vkGetDeviceProcAddr;
  if (!strcmp(name, "vkCreateInstance")) return (PFN_vkVoidFunction)CreateInstance;
  if (!strcmp(name, "vkCreateDevice")) return (PFN_vkVoidFunction)CreateDevice;
  if (!strcmp(name, "vkQueueSubmit")) return (PFN_vkVoidFunction)QueueSubmit;
  if (!strcmp(name, "vkQueueSubmit2")) return (PFN_vkVoidFunction)QueueSubmit2;
  if (!strcmp(name, "vkQueueSubmit2KHR")) return (PFN_vkVoidFunction)QueueSubmit2KHR;
  return NULL;
}

EXPORT VkResult vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v) {
  if (v->loaderLayerInterfaceVersion > 2) v->loaderLayerInterfaceVersion = 2;
  v->pfnGetInstanceProcAddr = vkGetInstanceProcAddr;
  v->pfnGetDeviceProcAddr = vkGetDeviceProcAddr;
  v->pfnGetPhysicalDeviceProcAddr = NULL;
  return VK_SUCCESS;
}

__attribute__((destructor)) static void write_counts(void) {
  const char *path = getenv("BLAZE_SUBMIT_COUNT_FILE");
  FILE *f = path ? fopen(path, "w") : NULL;
  if (!f) return;
  fprintf(f, "calls %lu\nbatches %lu\n", atomic_load(&calls), atomic_load(&batches));
  fclose(f);
}
