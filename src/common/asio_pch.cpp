// Compiled only so that the Asio/Beast precompiled header is built once and shared by every
// networking target (wg_use_asio_pch in the top-level CMakeLists.txt).
