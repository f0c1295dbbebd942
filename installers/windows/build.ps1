<#
.SYNOPSIS
  Build Relay for Windows: the PyInstaller bundle, its smoke test, and the Inno Setup installer.

.DESCRIPTION
  From the repository root (any folder works; the script finds the root itself):
    py -3.11 -m venv .venv; .venv\Scripts\python -m pip install -e ".[installer]"
    powershell -ExecutionPolicy Bypass -File installers\windows\build.ps1
  Produces
    dist\relay\                                     relay.exe (window), relay-cli.exe, _internal\
    dist\relay-<version>-windows-x64-setup.exe      the installer (installers\windows\relay.iss)
  Needs Inno Setup 6.3+ (ISCC.exe on PATH, in its default folder, or given with -Iscc;
  `choco install innosetup` or `winget install JRSoftware.InnoSetup` installs it).

.PARAMETER Python
  The Python that has Relay, PySide6 and PyInstaller (default: .venv\Scripts\python.exe,
  else python on PATH).
.PARAMETER Iscc
  Path of ISCC.exe (default: found on PATH or under Program Files).
.PARAMETER NoSmoke
  Skip installers\smoke.py on the bundle.
.PARAMETER BundleOnly
  Stop after the bundle (no installer).
#>
[CmdletBinding()]
param(
  [string]$Python = "",
  [string]$Iscc = "",
  [switch]$NoSmoke,
  [switch]$BundleOnly
)
$ErrorActionPreference = "Stop"
Set-StrictMode -Version Latest

$Root = (Resolve-Path (Join-Path $PSScriptRoot "..\..")).Path
Set-Location $Root

function Invoke-Checked {
  param([string]$Exe, [string[]]$Arguments)
  & $Exe @Arguments
  if ($LASTEXITCODE -ne 0) { throw "$Exe $($Arguments -join ' ') failed with exit code $LASTEXITCODE" }
}

if (-not $Python) {
  $venvPython = Join-Path $Root ".venv\Scripts\python.exe"
  $Python = if (Test-Path $venvPython) { $venvPython } else { "python" }
}
Invoke-Checked $Python @("-c", "import PyInstaller, PySide6, relay")
$Version = (& $Python -c "from importlib.metadata import version; print(version('relay'))").Trim()
Write-Host "[build] Relay $Version for windows-x64"

# The icon: resources\icons\relay.svg rendered to a multi-size .ico.
$Ico = Join-Path $Root "build\windows\relay.ico"
Invoke-Checked $Python @("installers\icons.py", "ico", $Ico)
$env:RELAY_ICON_ICO = $Ico

$started = Get-Date
Invoke-Checked $Python @("-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
  "--distpath", "dist", "--workpath", "build\pyinstaller", "installers\relay.spec")
$Bundle = Join-Path $Root "dist\relay"
foreach ($exe in @("relay.exe", "relay-cli.exe")) {
  if (-not (Test-Path (Join-Path $Bundle $exe))) { throw "PyInstaller did not produce $Bundle\$exe" }
}
$sizeMb = [math]::Round(((Get-ChildItem $Bundle -Recurse -File | Measure-Object Length -Sum).Sum / 1MB), 0)
Write-Host ("[build] bundle: $Bundle, $sizeMb MB, built in {0:N0} s" -f ((Get-Date) - $started).TotalSeconds)

if (-not $NoSmoke) {
  Invoke-Checked $Python @("installers\smoke.py", $Bundle, "--expect-version", $Version)
}
if ($BundleOnly) { exit 0 }

if (-not $Iscc) {
  $found = Get-Command "ISCC.exe" -ErrorAction SilentlyContinue
  if ($found) {
    $Iscc = $found.Source
  } else {
    foreach ($dir in @(${env:ProgramFiles(x86)}, $env:ProgramFiles, "$env:LOCALAPPDATA\Programs")) {
      if ($dir -and (Test-Path "$dir\Inno Setup 6\ISCC.exe")) { $Iscc = "$dir\Inno Setup 6\ISCC.exe"; break }
    }
  }
}
if (-not $Iscc) { throw "ISCC.exe (Inno Setup 6.3+) not found: choco install innosetup, or pass -Iscc" }

Invoke-Checked $Iscc @("/Q", "/DAppVersion=$Version", "/DBundleDir=$Bundle", "/DIconFile=$Ico",
  "/DOutputDir=$(Join-Path $Root 'dist')", "installers\windows\relay.iss")
$Setup = Join-Path $Root "dist\relay-$Version-windows-x64-setup.exe"
if (-not (Test-Path $Setup)) { throw "Inno Setup did not produce $Setup" }
Write-Host ("[build] installer: $Setup ({0:N0} MB)" -f ((Get-Item $Setup).Length / 1MB))
