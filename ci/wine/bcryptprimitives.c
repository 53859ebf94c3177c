/* bcryptprimitives.dll for Wine 8, which lacks ProcessPrng: Rust's std
 * (1.78 on) takes its random seeds (HashMap keys) from it. Forwards to
 * RtlGenRandom (advapi32's SystemFunction036), which Wine has. Built with
 * mingw-w64 by ci/windows.sh; used only to run the test suite under Wine. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG step = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, step))
            return FALSE;
        data += step;
        len -= step;
    }
    return TRUE;
}
