#pragma once

// Whether this build runs under AddressSanitizer. Test programs and the gateway they start are
// built with the same flags, so this tells a test how the process it starts behaves too.
namespace wg::test {

#if defined(__SANITIZE_ADDRESS__)  // GCC's name
inline constexpr bool kAddressSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang's
inline constexpr bool kAddressSanitized = true;
#else
inline constexpr bool kAddressSanitized = false;
#endif
#else
inline constexpr bool kAddressSanitized = false;
#endif

}  // namespace wg::test
